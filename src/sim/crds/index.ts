/**
 * The CustomResourceDefinitions the simulator installs for rollplane's targets, written to match the upstream ones
 * field for field (test/sim/crds/upstream.test.ts compares them with ../shared/upstream through the API).
 */
import type { KubeObject, ObjectStore } from '../types.js';
import { Resources } from '../store/resources.js';
import { IPPOOL_CRD } from './ippools.js';
import { NETWORK_ATTACHMENT_DEFINITION_CRD } from './networkAttachmentDefinitions.js';
import { CLUSTER_VERSION_CRD, VIRTUAL_CLUSTER_CRD } from './tenancy.js';

export { IPPOOL_CRD, NETWORK_ATTACHMENT_DEFINITION_CRD, CLUSTER_VERSION_CRD, VIRTUAL_CLUSTER_CRD };

export const PROJECT_CRDS: readonly KubeObject[] = Object.freeze([NETWORK_ATTACHMENT_DEFINITION_CRD, IPPOOL_CRD, VIRTUAL_CLUSTER_CRD, CLUSTER_VERSION_CRD]);

/** Creates the project's CRDs that are not there yet (an installed one, perhaps a user's own version, is kept). */
export function installProjectCrds(store: ObjectStore): number {
  let created = 0;
  for (const crd of PROJECT_CRDS) {
    if (store.get(Resources.customresourcedefinitions, undefined, crd.metadata.name)) continue;
    store.create(Resources.customresourcedefinitions, crd);
    created++;
  }
  return created;
}
