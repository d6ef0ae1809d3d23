import type { V1Service, V1StatefulSet } from '@kubernetes/client-node';
import { NotFoundError } from '../../../errors.js';
import { applyPatchOptions, kubeCall, mergePatchOptions, type KubeClients } from '../../../kube/index.js';
import {
  CV_PLURAL,
  LABEL_READY_FOR_UPGRADE,
  ANNOTATION_ROLLOUT,
  PROVISIONER_FIELD_MANAGER,
  ROLLPLANE_FIELD_MANAGER,
  TENANCY_GROUP,
  TENANCY_VERSION,
  VC_PLURAL,
} from './names.js';
import type { ClusterVersionObject, ClusterVersionSpec, EmbeddedObject, VirtualClusterObject } from './types.js';

const tenancy = { group: TENANCY_GROUP, version: TENANCY_VERSION };

/**
 * Every Kubernetes call of this kind, translated to AppErrors (src/kube/errors.ts). Control-plane writes are
 * server-side applies with force under upstream's field manager; ClusterVersion changes use rollplane's own.
 */
export class ControlPlaneApi {
  constructor(private readonly clients: KubeClients) {}

  getClusterVersion(name: string): Promise<ClusterVersionObject> {
    return kubeCall(`get ClusterVersion ${name}`, () => this.clients.custom.getClusterCustomObject({ ...tenancy, plural: CV_PLURAL, name }));
  }

  async findClusterVersion(name: string): Promise<ClusterVersionObject | undefined> {
    try {
      return await this.getClusterVersion(name);
    } catch (error) {
      if (error instanceof NotFoundError) return undefined;
      throw error;
    }
  }

  getVirtualCluster(namespace: string, name: string): Promise<VirtualClusterObject> {
    return kubeCall(`get VirtualCluster ${namespace}/${name}`, () =>
      this.clients.custom.getNamespacedCustomObject({ ...tenancy, plural: VC_PLURAL, namespace, name }),
    );
  }

  /** Optimistic-concurrency write of the whole object (the VirtualCluster has no status subresource). */
  replaceVirtualCluster(vc: VirtualClusterObject): Promise<VirtualClusterObject> {
    const { namespace, name } = vc.metadata;
    return kubeCall(`update VirtualCluster ${namespace}/${name}`, () =>
      this.clients.custom.replaceNamespacedCustomObject({ ...tenancy, plural: VC_PLURAL, namespace: namespace!, name: name!, body: vc }),
    );
  }

  /** Merge patch of annotations; a null value removes the annotation. */
  patchVirtualClusterAnnotations(namespace: string, name: string, annotations: Record<string, string | null>): Promise<VirtualClusterObject> {
    return kubeCall(`patch VirtualCluster ${namespace}/${name}`, () =>
      this.clients.custom.patchNamespacedCustomObject(
        { ...tenancy, plural: VC_PLURAL, namespace, name, body: { metadata: { annotations } } },
        mergePatchOptions(),
      ),
    );
  }

  /** The rollout driver's admission: the upstream opt-in label, plus the rollout that set it. */
  optInToUpgrade(namespace: string, name: string, rolloutId: string, options: { dryRun?: boolean } = {}): Promise<VirtualClusterObject> {
    return kubeCall(`label VirtualCluster ${namespace}/${name} ready for upgrade`, () =>
      this.clients.custom.patchNamespacedCustomObject(
        {
          ...tenancy,
          plural: VC_PLURAL,
          namespace,
          name,
          body: { metadata: { labels: { [LABEL_READY_FOR_UPGRADE]: 'true' }, annotations: { [ANNOTATION_ROLLOUT]: rolloutId } } },
          ...(options.dryRun ? { dryRun: 'All' } : {}),
        },
        mergePatchOptions(),
      ),
    );
  }

  /** Server-side apply of a ClusterVersion spec under rollplane's field manager. */
  applyClusterVersionSpec(name: string, spec: ClusterVersionSpec): Promise<ClusterVersionObject> {
    const body = { apiVersion: `${TENANCY_GROUP}/${TENANCY_VERSION}`, kind: 'ClusterVersion', metadata: { name }, spec };
    return kubeCall(`apply ClusterVersion ${name}`, () =>
      this.clients.custom.patchClusterCustomObject(
        { ...tenancy, plural: CV_PLURAL, name, body, fieldManager: ROLLPLANE_FIELD_MANAGER, force: true },
        applyPatchOptions(),
      ),
    );
  }

  applyService(namespace: string, body: EmbeddedObject): Promise<V1Service> {
    const name = body.metadata?.name ?? '';
    return kubeCall(`apply Service ${namespace}/${name}`, () =>
      this.clients.core.patchNamespacedService({ name, namespace, body, fieldManager: PROVISIONER_FIELD_MANAGER, force: true }, applyPatchOptions()),
    );
  }

  applyStatefulSet(namespace: string, body: EmbeddedObject): Promise<V1StatefulSet> {
    const name = body.metadata?.name ?? '';
    return kubeCall(`apply StatefulSet ${namespace}/${name}`, () =>
      this.clients.apps.patchNamespacedStatefulSet({ name, namespace, body, fieldManager: PROVISIONER_FIELD_MANAGER, force: true }, applyPatchOptions()),
    );
  }

  /**
   * Deletes the StatefulSet's pods that are not Ready and run another revision than its update revision. With
   * OrderedReady a broken pod (e.g. a bad image) blocks every later rollout until someone deletes it (Kubernetes
   * documents this as a manual step after reverting a bad template); the StatefulSet controller then recreates it at
   * the update revision. Returns the names deleted.
   */
  async deleteStuckPods(sts: V1StatefulSet): Promise<string[]> {
    const namespace = sts.metadata?.namespace ?? '';
    const updateRevision = sts.status?.updateRevision;
    const selector = Object.entries(sts.spec?.selector?.matchLabels ?? {})
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    if (!updateRevision || !selector) return [];
    const pods = await kubeCall(`list Pods of StatefulSet ${namespace}/${sts.metadata?.name}`, () =>
      this.clients.core.listNamespacedPod({ namespace, labelSelector: selector }),
    );
    const stuck = pods.items.filter(
      (pod) =>
        !pod.metadata?.deletionTimestamp &&
        pod.metadata?.labels?.['controller-revision-hash'] !== updateRevision &&
        pod.metadata?.ownerReferences?.some((o) => o.kind === 'StatefulSet' && o.name === sts.metadata?.name) &&
        !pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    );
    for (const pod of stuck) {
      await kubeCall(`delete Pod ${namespace}/${pod.metadata?.name}`, () =>
        this.clients.core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace }),
      ).catch((error: unknown) => {
        if (!(error instanceof NotFoundError)) throw error;
      });
    }
    return stuck.map((pod) => pod.metadata!.name!);
  }

  /** Every secret of the namespace by name (type and data): one list instead of a read per secret. */
  async readSecrets(namespace: string): Promise<Map<string, { type: string; data: Record<string, string> }>> {
    const list = await kubeCall(`list Secrets in ${namespace}`, () => this.clients.core.listNamespacedSecret({ namespace }));
    return new Map(list.items.map((secret) => [secret.metadata?.name ?? '', { type: secret.type ?? 'Opaque', data: secret.data ?? {} }]));
  }

  /** Applies the secret's whole data (keys it no longer has are dropped, as the field manager owned them). */
  applySecret(namespace: string, name: string, type: string, data: Record<string, string>): Promise<unknown> {
    const body = { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace }, type, data };
    return kubeCall(`apply Secret ${namespace}/${name}`, () =>
      this.clients.core.patchNamespacedSecret({ name, namespace, body, fieldManager: PROVISIONER_FIELD_MANAGER, force: true }, applyPatchOptions()),
    );
  }
}
