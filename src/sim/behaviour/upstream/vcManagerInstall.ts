/**
 * The CAPN vc-manager as `virtualcluster/config/setup/all_in_one.yaml` installs it (kubernetes-sigs/
 * cluster-api-provider-nested, commit 4d19ac6): namespace, ServiceAccount and Deployment `vc-manager/vc-manager`.
 * Its flags (cmd/manager/main.go) configure the simulated controller: `--feature-gates` and `--provisioner-timeout`.
 */
import type { KubeObject } from '../../types.js';

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
}

/** `--feature-gates=A=true,B=false` (also as two args) and `--provisioner-timeout=<Go duration>` (default 10m). */
export function parseVcManagerArgs(args: readonly string[]): VcManagerFlags {
  const values = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!.replace(/^--?/, '');
    const eq = arg.indexOf('=');
    if (eq >= 0) values.set(arg.slice(0, eq), arg.slice(eq + 1));
    else if (args[i + 1] !== undefined && !args[i + 1]!.startsWith('-')) values.set(arg, args[++i]!);
    else values.set(arg, 'true');
  }
  const gates = new Map<string, string>();
  for (const pair of (values.get('feature-gates') ?? '').split(',')) {
    const [k, v] = pair.split('=');
    if (k) gates.set(k.trim(), (v ?? '').trim().toLowerCase());
  }
  return { partialUpgrade: gates.get(PARTIAL_UPGRADE_GATE) === 'true', provisionerTimeoutMs: goDuration(values.get('provisioner-timeout')) ?? 600_000 };
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
