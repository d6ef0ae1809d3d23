/**
 * One environment variable of the agent container, resolved the way the kubelet builds the container's environment:
 * an `env` entry wins over every `envFrom` source; among `envFrom` sources the last one holding the key wins (with
 * its `prefix`). The cloud-api-adaptor reads its peer runtime class so (`RUNTIMECLASS_NAME`, from `peer-pods-cm`
 * through `envFrom` in the peerpods chart; `pkg/probe/checker.go` treats an empty value as unset).
 *
 * Secrets are not read: rollplane needs no access to the agent's credentials, and in the chart the ConfigMap comes
 * after the Secret, so it wins anyway. A Secret source listed after the deciding ConfigMap is named in `caveat`.
 */
import type { V1Container, V1DaemonSet } from '@kubernetes/client-node';
import { NotFoundError } from '../../../errors.js';
import { kubeCall, type KubeClients } from '../../../kube/index.js';
import type { DeclaredRuntimeClass } from '../plan.js';
import { agentContainerName } from './podFacts.js';

export const RUNTIMECLASS_ENV = 'RUNTIMECLASS_NAME';

type ReadConfigMap = (namespace: string, name: string) => Promise<Record<string, string> | undefined>;

/** `RUNTIMECLASS_NAME` as the DaemonSet's agent container would see it; undefined when unset or empty. */
export async function agentRuntimeClass(clients: KubeClients, ds: V1DaemonSet): Promise<DeclaredRuntimeClass | undefined> {
  const container = ds.spec?.template?.spec?.containers?.find((c) => c.name === agentContainerName(ds));
  if (!container) return undefined;
  const read: ReadConfigMap = async (namespace, name) => {
    try {
      const cm = await kubeCall(`read configmap ${namespace}/${name}`, () => clients.core.readNamespacedConfigMap({ namespace, name }));
      return cm.data ?? {};
    } catch (error) {
      // A missing (optional) ConfigMap contributes nothing, as in the kubelet.
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  };
  return resolveEnv(container, ds.metadata?.namespace ?? 'default', RUNTIMECLASS_ENV, read);
}

export async function resolveEnv(container: V1Container, namespace: string, key: string, read: ReadConfigMap): Promise<DeclaredRuntimeClass | undefined> {
  const literal = (container.env ?? []).filter((e) => e.name === key).at(-1);
  if (literal) {
    if (literal.value !== undefined) return nonEmpty(literal.value, `env ${key} of container ${container.name}`);
    const ref = literal.valueFrom?.configMapKeyRef;
    if (ref?.name) {
      const data = await read(namespace, ref.name);
      return nonEmpty(data?.[ref.key], `ConfigMap ${namespace}/${ref.name} key ${ref.key}`);
    }
    // A Secret or field reference: not something rollplane reads.
    return undefined;
  }
  const sources = container.envFrom ?? [];
  for (let i = sources.length - 1; i >= 0; i--) {
    const source = sources[i]!;
    const prefix = source.prefix ?? '';
    if (!key.startsWith(prefix)) continue;
    const name = source.configMapRef?.name;
    if (!name) continue;
    const data = await read(namespace, name);
    const value = data?.[key.slice(prefix.length)];
    if (value === undefined) continue;
    const later = sources
      .slice(i + 1)
      .filter((s) => s.secretRef?.name)
      .map((s) => s.secretRef!.name);
    const found = nonEmpty(value, `ConfigMap ${namespace}/${name} key ${key.slice(prefix.length)}`);
    return found && later.length > 0 ? { ...found, caveat: `Secret ${later.join(', ')} listed after it is not read and could override it` } : found;
  }
  return undefined;
}

function nonEmpty(value: string | undefined, source: string): DeclaredRuntimeClass | undefined {
  return value === undefined || value === '' ? undefined : { value, source };
}
