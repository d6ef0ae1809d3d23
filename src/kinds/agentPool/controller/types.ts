import type { KubernetesObject, V1Pod } from '@kubernetes/client-node';

/** An IPPool condition as the upstream controller writes it. */
export interface PoolCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastUpdateTime?: string;
}

export interface AgentRef {
  namespace?: string;
  name?: string;
  image?: string;
  uid?: string;
}

/** `network.harvesterhci.io/v1alpha1` IPPool, the fields rollplane reads and writes. */
export interface IPPool extends KubernetesObject {
  spec?: {
    ipv4Config?: {
      cidr?: string;
      serverIP?: string;
      pool?: { start?: string; end?: string; exclude?: string[] };
      router?: string;
    };
    networkName?: string;
    paused?: boolean;
  };
  status?: {
    lastUpdate?: string;
    ipv4?: { allocated?: Record<string, string>; used?: number; available?: number };
    agentPodRef?: AgentRef;
    conditions?: PoolCondition[];
    [field: string]: unknown;
  };
}

export type NetworkAttachmentDefinition = KubernetesObject;
export type AgentPod = V1Pod;

/**
 * A pool's recreation intent (RecordOnce): written when a rollout admits (or releases) the pool, before the write that
 * starts the recreation, and filled in when the old agent goes. Its AgentRecreated event removes it.
 */
export interface RecreationRecord {
  reason: string;
  oldUid: string | null;
  oldImage: string | null;
  /** The rollout that admitted the change, when one did (survives a restart of rollplane). */
  rolloutId?: string | null;
  /** The image the rollout in `rolloutId` asked for: a recreation to another image is not that rollout's. */
  plannedImage?: string | null;
  /**
   * ISO time the old agent was deleted (beside the vm-dhcp-controller: when rollplane released the pool). Absent while
   * the intent is only admitted: no agent has gone yet.
   */
  deletedAt?: string;
}
