import { deepEqual } from '../../store/objects.js';
import { Resources } from '../../store/resources.js';
import type { WebhookReview, WebhookServer } from '../../admission/webhooks.js';
import type { KubeObject, StoreEvent } from '../../types.js';
import type { Controller } from '../ControllerRuntime.js';
import type { BehaviourContext } from '../context.js';
import { isPodReady, isTerminating } from '../kube.js';
import { parseGoFlags } from '../../../util/goFlags.js';
import { isVmDhcpWebhookDeployment } from './vmDhcpChart.js';
import { validateIPPool, type VmDhcpWebhookConfig } from './vmDhcpValidator.js';

const KEY = 'vm-dhcp-webhook';
const VALIDATION_PATH = '/v1/webhook/validation';
const MUTATION_PATH = '/v1/webhook/mutation';

/**
 * The vm-dhcp webhook process (harvester/vm-dhcp-controller `cmd/webhook`, on harvester/webhook `pkg/server/server.go`),
 * run while a pod of the chart's webhook Deployment is Ready (replicas ≠ 0), configured by the Deployment's args (`--name`, `--namespace`,
 * `--service-cidr`) and its image tag (the validator's generation, see vmDhcpValidator.ts). On start it does what the
 * library does once its CA Secret exists: the CA Secret `<name>-ca` (dynamiclistener), then a
 * ValidatingWebhookConfiguration `<name>` — webhook `validator.<namespace>.<name>`, Service `<namespace>/<name>` port
 * 443 path `/v1/webhook/validation`, rules CREATE/UPDATE/DELETE of `ippools` and `virtualmachinenetworkconfigs`
 * (no subresources), failurePolicy Fail, sideEffects None — and the MutatingWebhookConfiguration (Ignore), both owned
 * by the CA Secret. So `helm uninstall` and a scale to 0 leave the configuration behind: every IPPool write is then
 * refused ("no endpoints available", or the Service not found). It serves behind its Service only while a webhook
 * pod is Ready (the Service's endpoints). Left out: the 15 s start-up sleep, the mutator's defaults, the
 * VirtualMachineNetworkConfig validator (allowed), TLS.
 */
export class VmDhcpWebhook implements Controller {
  readonly name = 'upstream:vm-dhcp-webhook';
  private stopServing: (() => void) | undefined;
  private served: string | undefined;

  constructor(private readonly ctx: BehaviourContext) {}

  get delayMs(): number {
    return this.ctx.delays.controllerMs;
  }

  keysFor(event: StoreEvent): string[] {
    const { group, plural } = event.resource;
    if (group === '' && plural === 'pods') return event.object.metadata.labels?.['app.kubernetes.io/component'] === 'webhook' ? [KEY] : [];
    if (group !== 'apps' || plural !== 'deployments') return [];
    return isVmDhcpWebhookDeployment(event.object) || (event.previous && isVmDhcpWebhookDeployment(event.previous)) ? [KEY] : [];
  }

  initialKeys(): string[] {
    return [KEY];
  }

  reconcile(): number | undefined {
    const deployment = [...this.ctx.index.all('deployments')].find((d) => isVmDhcpWebhookDeployment(d) && !isTerminating(d));
    // The process runs in the Deployment's pods; it registers once one of them serves. The chart's webhook has no
    // readiness probe, so that is Ready, and upstream registers 15 s after it listens: no earlier than Ready.
    const config = deployment && deployment.spec?.replicas !== 0 && this.podRuns(deployment) ? processConfig(deployment) : undefined;
    if (!config) {
      this.stopServing?.();
      this.stopServing = undefined;
      this.served = undefined;
      return undefined;
    }
    const signature = JSON.stringify(config);
    if (this.served !== signature) {
      this.stopServing?.();
      const servers = this.ctx.store.webhookServers;
      this.stopServing = servers?.serve(config.namespace, config.name, this.server(config));
      this.served = signature;
    }
    const secret = this.ensure(Resources.secrets, caSecret(config));
    this.ensure(Resources.validatingwebhookconfigurations, validatingConfiguration(config, secret));
    this.ensure(Resources.mutatingwebhookconfigurations, mutatingConfiguration(config, secret));
    return undefined;
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

  private server(config: ProcessConfig): WebhookServer {
    return (review: WebhookReview) => {
      if (review.path !== VALIDATION_PATH) return { allowed: true }; // the mutator: Ignore, not modelled
      if (review.resource.resource !== 'ippools') return { allowed: true };
      const pool = review.object ?? review.oldObject!;
      const refusal = validateIPPool(this.ctx.store, config, review.operation, pool);
      // A plain error becomes the library's NewInternalError: 500, reason InternalError, the error text as message.
      return refusal ? { allowed: false, status: { code: 500, reason: 'InternalError', message: refusal } } : { allowed: true };
    };
  }

  /** Creates `desired`, or brings the stored object's spec-like fields back to it; returns what is stored. */
  private ensure(type: (typeof Resources)[keyof typeof Resources], desired: KubeObject): KubeObject {
    const existing = this.ctx.store.get(type, desired.metadata.namespace, desired.metadata.name);
    if (!existing) return this.ctx.store.create(type, desired);
    const { metadata: _m, ...want } = desired;
    const { metadata: _e, ...have } = existing;
    if (deepEqual({ ...have, ...want }, have)) return existing;
    return this.ctx.store.update(type, { ...existing, ...want });
  }
}

interface ProcessConfig extends VmDhcpWebhookConfig {
  name: string;
  namespace: string;
}

/** cobra's flags of cmd/webhook/root.go (`--service-cidr` from v0.3.1 on; default 10.53.0.0/16). */
function processConfig(deployment: KubeObject): ProcessConfig | undefined {
  const container = deployment.spec?.template?.spec?.containers?.[0];
  const parsed = parseGoFlags(container?.args ?? [], { flags: {}, unknown: 'lenient' });
  if (parsed instanceof Error) return undefined;
  const last = (flag: string) => parsed.values.get(flag)?.at(-1);
  const image = String(container?.image ?? '');
  const colon = image.lastIndexOf(':');
  return {
    name: last('name') ?? '',
    namespace: last('namespace') ?? deployment.metadata.namespace ?? '',
    serviceCIDR: last('service-cidr') ?? '10.53.0.0/16',
    version: colon > image.lastIndexOf('/') ? image.slice(colon + 1) : 'latest',
  };
}

/** dynamiclistener's CA Secret `<name>-ca` (kubernetes.io/tls; the simulator's bytes are placeholders). */
function caSecret(config: ProcessConfig): KubeObject {
  const pem = (type: string) => Buffer.from(`-----BEGIN ${type}-----\nc2ltdWxhdGVk\n-----END ${type}-----\n`).toString('base64');
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `${config.name}-ca`, namespace: config.namespace },
    type: 'kubernetes.io/tls',
    data: { 'tls.crt': pem('CERTIFICATE'), 'tls.key': pem('EC PRIVATE KEY') },
  };
}

function ownedBy(secret: KubeObject) {
  return [{ apiVersion: 'v1', kind: 'Secret', name: secret.metadata.name, uid: secret.metadata.uid! }];
}

function clientConfig(config: ProcessConfig, path: string) {
  return { service: { namespace: config.namespace, name: config.name, path, port: 443 }, caBundle: caSecretBundle() };
}

function caSecretBundle(): string {
  return Buffer.from('-----BEGIN CERTIFICATE-----\nc2ltdWxhdGVk\n-----END CERTIFICATE-----\n').toString('base64');
}

/** harvester/webhook `buildRules` over the registered validators: IPPool and VirtualMachineNetworkConfig. */
function rules(operations: string[]) {
  return ['ippools', 'virtualmachinenetworkconfigs'].map((resource) => ({
    operations,
    apiGroups: ['network.harvesterhci.io'],
    apiVersions: ['v1alpha1'],
    resources: [resource],
    scope: 'Namespaced',
  }));
}

function validatingConfiguration(config: ProcessConfig, secret: KubeObject): KubeObject {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: config.name, ownerReferences: ownedBy(secret) },
    webhooks: [
      {
        name: `validator.${config.namespace}.${config.name}`,
        clientConfig: clientConfig(config, VALIDATION_PATH),
        rules: rules(['CREATE', 'UPDATE', 'DELETE']),
        failurePolicy: 'Fail',
        sideEffects: 'None',
        admissionReviewVersions: ['v1', 'v1beta1'],
        timeoutSeconds: 10,
      },
    ],
  };
}

function mutatingConfiguration(config: ProcessConfig, secret: KubeObject): KubeObject {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: config.name, ownerReferences: ownedBy(secret) },
    webhooks: [
      {
        name: `mutator.${config.namespace}.${config.name}`,
        clientConfig: clientConfig(config, MUTATION_PATH),
        rules: rules(['CREATE', 'UPDATE']).slice(0, 1),
        failurePolicy: 'Ignore',
        sideEffects: 'None',
        admissionReviewVersions: ['v1', 'v1beta1'],
        timeoutSeconds: 10,
      },
    ],
  };
}
