/**
 * The virtual clusters' own event type (ADR 0051): its payload's schema and notification name, typed into the domain
 * by declaration merging (`KindEvents`). Loaded with the kind (its module.ts), defined once.
 */
import { z } from 'zod';
import { defineEvent, orNull, text } from '../../domain/eventPayloads.js';

/**
 * A VirtualCluster's upgrade seen through (or failed): the `clusterUpgradeObserved` subscription's feed. Its `cluster`
 * is the VirtualCluster (`namespace/name`), not a member cluster: notification routing does not read it as one.
 */
export const clusterUpgradeObserved = defineEvent(
  'ClusterUpgradeObserved',
  z.object({
    cluster: text,
    clusterVersion: text,
    resourceVersion: text,
    specVersion: text,
    seconds: z.number(),
    outcome: z.enum(['SUCCEEDED', 'FAILED', 'ALREADY_APPLIED']),
    components: z.array(z.object({ component: z.enum(['apiserver-service', 'pki', 'apiserver', 'controller-manager']), seconds: z.number() })),
    error: orNull(text),
    rootCaGenerated: z.boolean().optional(),
  }),
  'cluster_upgrade.observed',
);

/** This kind's event definitions (its module lists them). */
export const VIRTUAL_CLUSTER_EVENTS = [clusterUpgradeObserved] as const;

declare module '../../domain/eventPayloads.js' {
  interface KindEvents {
    ClusterUpgradeObserved: typeof clusterUpgradeObserved;
  }
}
