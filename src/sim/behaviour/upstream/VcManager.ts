import { createHash, randomBytes } from 'node:crypto';
import { serverSideApply } from '../../api/patch/managedFields.js';
import { SimApiError } from '../../store/errors.js';
import { deepClone } from '../../store/objects.js';
import { hasStatus } from '../../store/resources.js';
import type { KubeObject, ResourceType, StoreEvent } from '../../types.js';
import type { Controller } from '../ControllerRuntime.js';
import type { BehaviourContext } from '../context.js';
import { isPodReady, isTerminating, keyOf, splitKey } from '../kube.js';
import { isVcManagerDeployment, parseVcManagerArgs, type VcManagerFlags } from './vcManagerInstall.js';
import { VC_WEBHOOK_CONFIGURATION, vcWebhookConfiguration, vcWebhookServer, vcWebhookService, VC_WEBHOOK_SERVICE } from './vcManagerWebhook.js';
import { Resources } from '../../store/resources.js';

export const READY_FOR_UPGRADE = 'tenancy.x-k8s.io/ready-for-upgrade';
/** The key of the manager's start-up work (the webhook), beside the VirtualCluster keys `namespace/name`. */
const START_KEY = 'vc-manager:start';
export const CLUSTER_VERSION_APPLIED = 'tenancy.x-k8s.io/cluster-version-applied';
const LABEL_CLUSTER = 'tenancy.x-k8s.io/cluster';
const FIELD_MANAGER = 'virtualcluster/provisioner/native';

export interface VcManagerTiming {
  /** `ComponentPollPeriodSec`: how often a component's StatefulSet is checked while the upgrade waits (upstream 2 s). */
  pollMs: number;
}

export const VC_MANAGER_TIMING: Readonly<VcManagerTiming> = Object.freeze({ pollMs: 2000 });

/** One upgrade in flight: upstream runs it inside one Reconcile call, holding the VirtualCluster it read at the start. */
interface Upgrade {
  vc: KubeObject;
  clusterNs: string;
  bundles: any[];
  index: number;
  deadline: number | undefined;
}

/**
 * The CAPN vc-manager's VirtualCluster reconciler for the Running phase (`controllers/virtualcluster_controller.go`,
 * `provisioner/provisioner_native.go`, commit 4d19ac6), run while its Deployment exists, with the feature gate
 * `ClusterVersionPartialUpgrade` read from that Deployment's `--feature-gates` (off by default, as upstream).
 *
 * Gate on, a Running VirtualCluster labelled `tenancy.x-k8s.io/ready-for-upgrade: "true"` is upgraded to its
 * ClusterVersion as upstream does it, known defects included:
 * - the applied marker label is set before anything is applied and written with the final status even when the
 *   upgrade failed, so a failed cluster re-labelled reports `TenantControlPlaneUpgradeCompleted` without doing anything;
 * - a component counts as ready when `readyReplicas == spec.replicas` (old pods count), checked every poll period;
 * - the final write restores the labels and status the controller read at the start (minus the opt-in label, plus
 *   the marker), so label changes made by anyone else during the upgrade are lost;
 * - ClusterVersion changes do not trigger anything (only VirtualCluster events do).
 * Gate off, it does nothing for upgrades. Creation (Pending) and deletion (finalizer) are not modelled.
 */
export class VcManager implements Controller {
  readonly name = 'upstream:vc-manager';
  private readonly upgrades = new Map<string, Upgrade>();
  private lastArgs: string | undefined;
  /** The webhook server of the running process (stopped with it), and the args it was started with. */
  private webhook: { args: string; stop: () => void } | undefined;

  constructor(
    private readonly ctx: BehaviourContext,
    private readonly timing: VcManagerTiming = VC_MANAGER_TIMING,
  ) {
    this.lastArgs = this.argsSignature();
  }

  get delayMs(): number {
    return this.ctx.delays.controllerMs;
  }

  keysFor(event: StoreEvent): string[] {
    const { group, plural } = event.resource;
    // The process starts in the manager's pod: its start-up work waits for one to run.
    if (group === '' && plural === 'pods' && event.object.metadata.labels?.app === 'vc-manager') return [START_KEY];
    if (group === 'tenancy.x-k8s.io' && plural === 'virtualclusters')
      return event.type === 'DELETED' || this.lastArgs === undefined ? [] : [keyOf(event.object)];
    if (group === 'apps' && plural === 'deployments' && (isVcManagerDeployment(event.object) || (event.previous && isVcManagerDeployment(event.previous)))) {
      const args = this.argsSignature();
      if (args === this.lastArgs) return [];
      this.lastArgs = args;
      // A restarted manager lists every VirtualCluster; an upgrade it was in the middle of dies with the old process.
      this.upgrades.clear();
      return [START_KEY, ...(args ? this.allKeys() : [])];
    }
    return [];
  }

  initialKeys(): string[] {
    return this.lastArgs === undefined ? [] : [START_KEY, ...this.allKeys()];
  }

  reconcile(key: string): number | undefined {
    const flags = this.flags();
    if (key === START_KEY) return this.start(flags);
    if (!flags) {
      this.upgrades.clear();
      return undefined;
    }
    const inFlight = this.upgrades.get(key);
    if (inFlight) return this.advance(key, inFlight, flags);
    const vcType = this.type('tenancy.x-k8s.io', 'virtualclusters');
    if (!vcType) return undefined;
    const { namespace, name } = splitKey(key);
    const current = this.ctx.store.get(vcType, namespace, name);
    if (!current || isTerminating(current)) return undefined;
    if (current.status?.phase !== 'Running') return undefined;
    if (!flags.partialUpgrade) return undefined;
    if (current.metadata.labels?.[READY_FOR_UPGRADE] !== 'true') return undefined;
    return this.upgrade(key, deepClone(current), flags);
  }

  /**
   * What the process does when it starts (or stops): with `--enable-webhook`, `webhook.Add` creates the webhook Service
   * and re-creates the ValidatingWebhookConfiguration, then serves; a stopped process serves nothing and removes
   * nothing.
   */
  private start(flags: VcManagerFlags | undefined): undefined {
    const args = this.argsSignature();
    const deployment = this.deployment();
    if (!flags?.enableWebhook || !args || !deployment || !this.podRuns(deployment)) {
      this.webhook?.stop();
      this.webhook = undefined;
      return undefined;
    }
    if (this.webhook?.args === args) return undefined;
    this.webhook?.stop();
    const namespace = deployment.metadata.namespace ?? '';
    if (!this.ctx.store.get(Resources.services, namespace, VC_WEBHOOK_SERVICE)) this.ctx.store.create(Resources.services, vcWebhookService(namespace));
    const type = Resources.validatingwebhookconfigurations;
    if (this.ctx.store.get(type, undefined, VC_WEBHOOK_CONFIGURATION)) this.ctx.store.delete(type, undefined, VC_WEBHOOK_CONFIGURATION);
    this.ctx.store.create(type, vcWebhookConfiguration(namespace));
    const stop = this.ctx.store.webhookServers?.serve(namespace, VC_WEBHOOK_SERVICE, vcWebhookServer) ?? (() => undefined);
    this.webhook = { args, stop };
    return undefined;
  }

  private upgrade(key: string, vc: KubeObject, flags: VcManagerFlags): number | undefined {
    const cvName = String(vc.spec?.clusterVersionName ?? '');
    const cvType = this.type('tenancy.x-k8s.io', 'clusterversions');
    const cv = cvType ? this.ctx.store.get(cvType, undefined, cvName) : undefined;
    if (!cv) return this.finish(key, vc, new Error(`desired ClusterVersion ${cvName} not found`));
    const rv = cv.metadata.resourceVersion ?? '';
    if (vc.metadata.labels?.[CLUSTER_VERSION_APPLIED] === rv) return this.finish(key, vc, undefined); // "cluster is already in desired version"
    // Defect kept: the marker goes into the in-memory object now, and is written with the status whatever happens.
    vc.metadata.labels = { ...vc.metadata.labels, [CLUSTER_VERSION_APPLIED]: rv };
    const clusterNs = toClusterKey(vc);
    const spec = deepClone(cv.spec ?? {});
    try {
      const apiServer = spec.apiServer;
      if (!apiServer?.statefulset) throw new Error('try to deploy unknown component: ');
      const isClusterIP = apiServer.service?.spec?.type === 'ClusterIP';
      if (isClusterIP) this.apply('', 'services', { ...apiServer.service, metadata: { ...apiServer.service.metadata, namespace: clusterNs } });
      const hashes = this.applyPki(vc, clusterNs);
      // etcd is not touched on upgrade; apiserver always, controller-manager when defined.
      const bundles = [apiServer, spec.controllerManager].filter(Boolean).map((b: any) => complement(b, clusterNs, hashes));
      const upgrade: Upgrade = { vc, clusterNs, bundles, index: 0, deadline: undefined };
      this.upgrades.set(key, upgrade);
      return this.advance(key, upgrade, flags);
    } catch (error) {
      return this.finish(key, vc, error as Error);
    }
  }

  /** Deploys the next component, or checks the one being waited for (`WaitStatefulSetReady`). */
  private advance(key: string, upgrade: Upgrade, flags: VcManagerFlags): number | undefined {
    const now = this.ctx.scheduler.now();
    try {
      while (upgrade.index < upgrade.bundles.length) {
        const bundle = upgrade.bundles[upgrade.index]!;
        const stsName = bundle.statefulset.metadata.name;
        if (upgrade.deadline === undefined) {
          this.apply('apps', 'statefulsets', bundle.statefulset);
          const skipService = bundle.metadata?.name === 'apiserver' && bundle.service?.spec?.type === 'ClusterIP';
          if (bundle.service && !skipService) this.apply('', 'services', bundle.service);
          upgrade.deadline = now + flags.provisionerTimeoutMs;
          return this.timing.pollMs; // the first look comes one poll period later
        }
        const sts = this.ctx.index.get('statefulsets', `${upgrade.clusterNs}/${stsName}`);
        if (!sts) throw new Error(`statefulsets.apps "${stsName}" not found`);
        // Defect kept: ready replicas of any revision count, and a status not yet updated for the new spec counts too.
        if (Number(sts.status?.readyReplicas ?? 0) === Number(sts.spec?.replicas ?? 1)) {
          upgrade.index++;
          upgrade.deadline = undefined;
          continue;
        }
        if (now >= upgrade.deadline)
          throw new Error(`${upgrade.clusterNs}/${stsName} is not ready in ${Math.round(flags.provisionerTimeoutMs / 1000)} seconds`);
        return this.timing.pollMs;
      }
    } catch (error) {
      return this.finish(key, upgrade.vc, error as Error);
    }
    return this.finish(key, upgrade.vc, undefined);
  }

  /** Status reason and message, the opt-in label removed, written over the object as read at the start. */
  private finish(key: string, vc: KubeObject, error: Error | undefined): undefined {
    this.upgrades.delete(key);
    const [message, reason] = error
      ? [`fail to upgrade: ${error.message}`, 'TenantControlPlaneUpgradeFailed']
      : ['tenant control plane is upgraded', 'TenantControlPlaneUpgradeCompleted'];
    const status = deepClone(vc.status ?? {});
    status.clusterNamespace = toClusterKey(vc);
    status.phase = 'Running';
    status.message = message;
    status.reason = reason;
    const stamp = new Date(this.ctx.scheduler.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const conditions: any[] = status.conditions ?? [];
    const same = conditions.find((c) => c.reason === reason && c.status === 'True');
    if (same) same.lastTransitionTime = stamp;
    else conditions.push({ lastTransitionTime: stamp, reason, message, status: 'True' });
    status.conditions = conditions;
    const labels = { ...vc.metadata.labels };
    delete labels[READY_FOR_UPGRADE];
    const type = this.type('tenancy.x-k8s.io', 'virtualclusters');
    if (!type) return undefined;
    // RetryOnConflict: on a conflict upstream re-reads the object and puts its in-memory labels and status back on it.
    const { namespace, name } = splitKey(key);
    const fresh = this.ctx.store.get(type, namespace, name);
    if (!fresh) return undefined;
    const next: KubeObject = { ...fresh, metadata: { ...fresh.metadata, labels }, status };
    const stored = this.ctx.store.update(type, next);
    if (hasStatus(type)) this.ctx.store.update(type, { ...stored, status }, 'status');
    return undefined;
  }

  /** createAndApplyPKI: reuse root-ca if present (it must decode as PEM, key in PKCS#1), regenerate the rest. */
  private applyPki(vc: KubeObject, clusterNs: string): Record<string, string> {
    const secrets = this.type('', 'secrets')!;
    const rootNs = String(vc.status?.clusterNamespace ?? clusterNs);
    const root = this.ctx.store.get(secrets, rootNs, 'root-ca');
    let rootData: Record<string, string>;
    const rootSecret = root?.data as Record<string, string> | undefined;
    if (root) {
      const crt = decode(rootSecret?.['tls.crt']);
      const key = decode(rootSecret?.['tls.key']);
      if (!/-----BEGIN [A-Z ]+-----/.test(crt)) throw new Error('failed to decode certificate');
      const keyType = /-----BEGIN ([A-Z ]+)-----/.exec(key)?.[1];
      if (!keyType) throw new Error('failed to decode private key');
      if (keyType === 'PRIVATE KEY') throw new Error('x509: failed to parse private key (use ParsePKCS8PrivateKey instead for this key format)');
      if (keyType === 'EC PRIVATE KEY') throw new Error('x509: failed to parse private key (use ParseECPrivateKey instead for this key format)');
      rootData = { 'tls.crt': rootSecret!['tls.crt']!, 'tls.key': rootSecret!['tls.key']! };
    } else {
      rootData = tlsData();
    }
    const data: Record<string, { type: string; data: Record<string, string> }> = {
      'root-ca': { type: 'kubernetes.io/tls', data: rootData },
      'apiserver-ca': { type: 'kubernetes.io/tls', data: tlsData() },
      'etcd-ca': { type: 'kubernetes.io/tls', data: tlsData() },
      'front-proxy-ca': { type: 'kubernetes.io/tls', data: tlsData() },
      'controller-manager-kubeconfig': { type: 'Opaque', data: { 'controller-manager-kubeconfig': kubeconfigData(vc) } },
      'admin-kubeconfig': { type: 'Opaque', data: { 'admin-kubeconfig': kubeconfigData(vc) } },
      'serviceaccount-rsa': { type: 'kubernetes.io/tls', data: tlsData('PUBLIC KEY') },
    };
    const hashes: Record<string, string> = {};
    for (const [name, secret] of Object.entries(data)) {
      const existing = this.ctx.store.get(secrets, clusterNs, name);
      if (existing && (existing.type ?? 'Opaque') !== secret.type) {
        throw new SimApiError(422, 'Invalid', `Secret "${name}" is invalid: type: Invalid value: "${secret.type}": field is immutable`);
      }
      this.apply('', 'secrets', { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: clusterNs }, type: secret.type, data: secret.data });
      hashes[name] = createHash('sha256').update(JSON.stringify(secret.data)).digest('hex');
    }
    return hashes;
  }

  /** Server-side apply with force as field manager `virtualcluster/provisioner/native`, in-process. */
  private apply(group: string, plural: string, object: KubeObject): KubeObject {
    const type = this.type(group, plural);
    if (!type) throw new Error(`the server could not find the requested resource (${plural})`);
    const applied = deepClone(object);
    delete applied.status;
    const existing = this.ctx.store.get(type, applied.metadata.namespace, applied.metadata.name);
    const now = new Date(this.ctx.scheduler.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const ctx = {
      manager: FIELD_MANAGER,
      apiVersion: `${type.group ? `${type.group}/` : ''}${type.version}`,
      subresource: '',
      now,
      scope: hasStatus(type) ? ('main' as const) : ('all' as const),
    };
    const next = serverSideApply(type, existing, applied, ctx, true);
    if (existing) return this.ctx.store.update(type, next);
    if (type.namespaced) next.metadata.namespace = applied.metadata.namespace;
    return this.ctx.store.create(type, next);
  }

  /** The running process's flags; undefined when it does not run (absent, scaled to 0, or args it exits on). */
  private flags(): VcManagerFlags | undefined {
    const d = this.deployment();
    if (!d || d.spec?.replicas === 0) return undefined;
    const flags = parseVcManagerArgs(containerArgs(d));
    return flags instanceof Error ? undefined : flags;
  }

  private podRuns(deployment: KubeObject): boolean {
    const selector = (deployment.spec?.selector?.matchLabels ?? {}) as Record<string, string>;
    return [...this.ctx.index.all('pods')].some(
      (pod) =>
        pod.metadata.namespace === deployment.metadata.namespace &&
        !isTerminating(pod) &&
        isPodReady(pod) &&
        Object.entries(selector).every(([k, v]) => pod.metadata.labels?.[k] === v),
    );
  }

  private deployment(): KubeObject | undefined {
    for (const d of this.ctx.index.all('deployments')) if (isVcManagerDeployment(d) && !isTerminating(d)) return d;
    return undefined;
  }

  private argsSignature(): string | undefined {
    const d = this.deployment();
    return d && d.spec?.replicas !== 0 ? `${d.metadata.uid}\u0000${JSON.stringify(containerArgs(d))}` : undefined;
  }

  private allKeys(): string[] {
    const type = this.type('tenancy.x-k8s.io', 'virtualclusters');
    return type ? this.ctx.store.list(type).map(keyOf) : [];
  }

  private type(group: string, plural: string): ResourceType | undefined {
    return this.ctx.store.resourceType(group, plural);
  }
}

function containerArgs(d: KubeObject): string[] {
  const c = (d.spec?.template?.spec?.containers ?? []).find((x: { name?: string }) => x.name === 'vc-manager');
  return [...(c?.args ?? [])];
}

/** complementAPIServerTemplate / complementCtrlMgrTemplate: namespace, certificate-hash annotations, cluster label. */
function complement(bundle: any, clusterNs: string, hashes: Record<string, string>): any {
  const out = deepClone(bundle);
  const name = out.metadata?.name;
  const hashed =
    name === 'apiserver'
      ? ['root-ca', 'apiserver-ca', 'front-proxy-ca', 'serviceaccount-rsa']
      : name === 'controller-manager'
        ? ['root-ca', 'serviceaccount-rsa', 'controller-manager-kubeconfig']
        : undefined;
  if (!hashed) throw new Error(`try to deploy unknown component: ${name}`);
  out.statefulset.metadata = { ...out.statefulset.metadata, namespace: clusterNs };
  if (out.service) out.service.metadata = { ...out.service.metadata, namespace: clusterNs };
  out.statefulset.spec.template ??= {};
  const template = out.statefulset.spec.template;
  template.metadata ??= {};
  template.metadata.annotations = { ...template.metadata.annotations };
  for (const secret of hashed) template.metadata.annotations[`${secret}-hash`] = hashes[secret];
  template.metadata.labels = { ...template.metadata.labels, [LABEL_CLUSTER]: clusterNs };
  return out;
}

/** conversion.ToClusterKey: `<namespace>-<first 6 hex of sha256(uid)>-<name>`. */
export function toClusterKey(vc: KubeObject): string {
  const digest = createHash('sha256')
    .update(vc.metadata.uid ?? '')
    .digest('hex')
    .slice(0, 6);
  return `${vc.metadata.namespace}-${digest}-${vc.metadata.name}`;
}

function decode(value: unknown): string {
  return typeof value === 'string' ? Buffer.from(value, 'base64').toString('utf8') : '';
}

/** PEM-framed random bytes: the simulation does no cryptography, but the shape (and a changing hash) is upstream's. */
function pem(type: string): string {
  const body = randomBytes(96)
    .toString('base64')
    .replace(/(.{64})/g, '$1\n');
  return `-----BEGIN ${type}-----\n${body}\n-----END ${type}-----\n`;
}

function tlsData(certType = 'CERTIFICATE'): Record<string, string> {
  return { 'tls.crt': Buffer.from(pem(certType)).toString('base64'), 'tls.key': Buffer.from(pem('RSA PRIVATE KEY')).toString('base64') };
}

function kubeconfigData(vc: KubeObject): string {
  return Buffer.from(
    `apiVersion: v1\nkind: Config\nclusters:\n- name: ${vc.metadata.name}\n  cluster:\n    certificate-authority-data: ${randomBytes(24).toString('base64')}\n`,
  ).toString('base64');
}
