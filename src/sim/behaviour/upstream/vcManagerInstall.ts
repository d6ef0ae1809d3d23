/**
 * The CAPN vc-manager as `virtualcluster/config/setup/all_in_one.yaml` installs it (kubernetes-sigs/
 * cluster-api-provider-nested, commit 4d19ac6): namespace, ServiceAccount and Deployment `vc-manager/vc-manager`.
 * Its flags (cmd/manager/main.go) configure the simulated controller: `--feature-gates`, `--provisioner-timeout` and
 * `--enable-webhook`.
 */
import type { KubeObject } from '../../types.js';
import { mapStringBool, parseGoBool, parseGoFlags } from '../../../util/goFlags.js';

export const VC_MANAGER_NAMESPACE = 'vc-manager';
export const VC_MANAGER_NAME = 'vc-manager';
export const PARTIAL_UPGRADE_GATE = 'ClusterVersionPartialUpgrade';

export function isVcManagerDeployment(obj: KubeObject): boolean {
  return (
    obj.metadata.labels?.app === VC_MANAGER_NAME && (obj.spec?.template?.spec?.containers ?? []).some((c: { name?: string }) => c.name === VC_MANAGER_NAME)
  );
}

export function vcManagerObjects(options: { partialUpgrade?: boolean } = {}): { namespace: KubeObject; serviceAccount: KubeObject; deployment: KubeObject } {
  const args = ['--disable-stacktrace=true', '--enable-webhook=true'];
  if (options.partialUpgrade) args.push(`--feature-gates=${PARTIAL_UPGRADE_GATE}=true`);
  return {
    namespace: {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: VC_MANAGER_NAMESPACE, labels: { 'kubernetes.io/metadata.name': VC_MANAGER_NAMESPACE } },
    },
    serviceAccount: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: VC_MANAGER_NAME, namespace: VC_MANAGER_NAMESPACE } },
    deployment: {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: VC_MANAGER_NAME, namespace: VC_MANAGER_NAMESPACE, labels: { app: VC_MANAGER_NAME } },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: VC_MANAGER_NAME } },
        template: {
          metadata: { labels: { app: VC_MANAGER_NAME, 'virtualcluster-webhook': 'true' } },
          spec: {
            serviceAccountName: VC_MANAGER_NAME,
            containers: [{ command: ['manager'], args, image: 'virtualcluster/manager-amd64', imagePullPolicy: 'Always', name: VC_MANAGER_NAME }],
          },
        },
      },
    },
  };
}

export interface VcManagerFlags {
  partialUpgrade: boolean;
  provisionerTimeoutMs: number;
  /** `--enable-webhook`: the manager registers its VirtualCluster validating webhook at start-up. */
  enableWebhook: boolean;
}

/** The flags cmd/manager/main.go defines, and how each takes its value (Go's flag package). */
const MANAGER_FLAGS = {
  'metrics-addr': 'value',
  'health-addr': 'value',
  'master-prov': 'value',
  provisioner: 'value',
  'leader-election': 'bool',
  'le-cm-name': 'value',
  'leader-elect-resource-name': 'value',
  'leader-elect-resource-lock': 'value',
  'num-reconciles': 'value',
  'log-file': 'value',
  version: 'bool',
  'disable-stacktrace': 'bool',
  'enable-webhook': 'bool',
  'provisioner-timeout': 'value',
  'feature-gates': 'value',
} as const;

/** The gates `syncer/util/featuregate/gate.go` knows; any other key makes `NewFeatureGate` fail and the manager exit. */
export const KNOWN_FEATURE_GATES: readonly string[] = [
  'SuperClusterPooling',
  'SuperClusterServiceNetwork',
  'SuperClusterLabelling',
  'SuperClusterLabelFilter',
  'VNodeProviderService',
  'TenantAllowDNSPolicy',
  'VNodeProviderPodIP',
  PARTIAL_UPGRADE_GATE,
  'TenantAllowResourceNoSync',
  'DisableCRDPreserveUnknownFields',
  'RootCACertConfigMapSupport',
  'VServiceExternalIP',
  'KubeAPIAccessSupport',
  'SyncTenantPVCStatusPhase',
];

/**
 * The manager's flags as cmd/manager/main.go parses them: Go's flag package (an undefined flag, a bad bool or a bad
 * duration exit with code 2), `--feature-gates` through MapStringBool (every occurrence adds to one map, values in any
 * `strconv.ParseBool` spelling), then `NewFeatureGate` (an unknown gate exits with code 1). An Error is the reason the
 * process exits.
 */
export function parseVcManagerArgs(args: readonly string[]): VcManagerFlags | Error {
  const parsed = parseGoFlags(args, { flags: MANAGER_FLAGS, unknown: 'error' });
  if (parsed instanceof Error) return parsed;
  const last = (flag: string) => parsed.values.get(flag)?.at(-1);
  const gates = mapStringBool(parsed.values.get('feature-gates') ?? []);
  if (gates instanceof Error) return gates;
  for (const key of gates.keys()) if (!KNOWN_FEATURE_GATES.includes(key)) return new Error(`unrecognized feature-gate key: ${key}`);
  const timeout = last('provisioner-timeout');
  const timeoutMs = timeout === undefined ? 600_000 : goDuration(timeout);
  if (timeoutMs === undefined) return new Error(`invalid value "${timeout}" for flag -provisioner-timeout: parse error`);
  return {
    partialUpgrade: gates.get(PARTIAL_UPGRADE_GATE) === true,
    provisionerTimeoutMs: timeoutMs,
    enableWebhook: last('enable-webhook') !== undefined && parseGoBool(last('enable-webhook')!) === true,
  };
}

/** Go's time.ParseDuration for the units a flag would use (h, m, s, ms); undefined when unparsable. */
export function goDuration(text: string | undefined): number | undefined {
  if (!text) return undefined;
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001, µs: 0.001, ns: 0.000001 };
  let total = 0;
  let rest = text.trim();
  if (!/^(\d+(\.\d+)?(h|m|s|ms|us|µs|ns))+$/.test(rest)) return undefined;
  while (rest) {
    const m = /^(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)/.exec(rest)!;
    total += Number(m[1]) * units[m[2]!]!;
    rest = rest.slice(m[0].length);
  }
  return total;
}
