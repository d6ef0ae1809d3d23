import { AppError, ErrorCode } from '../../errors.js';
import type { ObjectStore, ResourceType } from '../types.js';
import type { ClusterIndex } from './ClusterIndex.js';
import type { SimDelays } from './delays.js';
import type { Scheduler } from './scheduler.js';

export interface BehaviourTypes {
  pods: ResourceType;
  nodes: ResourceType;
  replicasets: ResourceType;
  deployments: ResourceType;
  daemonsets: ResourceType;
  statefulsets: ResourceType;
  /** Absent when the store does not serve ControllerRevisions; revisions then live only in memory. */
  controllerrevisions: ResourceType | undefined;
}

/** What every simulated controller shares. */
export interface BehaviourContext {
  store: ObjectStore;
  index: ClusterIndex;
  scheduler: Scheduler;
  delays: SimDelays;
  types: BehaviourTypes;
  /** Images that fail to pull. */
  badImages: RegExp[];
  /** spec.runtimeClassName of peer pods (restarted when their node's node agent is replaced). */
  peerRuntimeClass: string;
}

/** The label that marks a node-agent DaemonSet (and its pods), per spec/node-agents.md. */
export const NODE_AGENT_LABEL = 'rollplane.io/node-agent';

export function resolveTypes(store: ObjectStore): BehaviourTypes {
  const need = (group: string, plural: string): ResourceType => {
    const type = store.resourceType(group, plural);
    if (!type) throw new AppError(ErrorCode.Internal, `simulator store does not serve ${plural}${group ? `.${group}` : ''}`);
    return type;
  };
  return {
    pods: need('', 'pods'),
    nodes: need('', 'nodes'),
    replicasets: need('apps', 'replicasets'),
    deployments: need('apps', 'deployments'),
    daemonsets: need('apps', 'daemonsets'),
    statefulsets: need('apps', 'statefulsets'),
    controllerrevisions: store.resourceType('apps', 'controllerrevisions'),
  };
}

/** Converts a shell-style glob (`*`, `?`) into an anchored RegExp. */
export function globToRegExp(glob: string): RegExp {
  const escaped = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${escaped}$`);
}
