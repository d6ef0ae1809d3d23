/** Names rollplane writes on node-agent DaemonSets and their pods (see docs/adr/0006-node-agent-gate.md). */

/** Marks a DaemonSet (and, through its template, its pods) as a node agent rollplane manages. */
export const NODE_AGENT_LABEL = 'rollplane.io/node-agent';
/** On the DaemonSet: the runtime class of the peer pods its agent serves (default kata-remote). */
export const PEER_RUNTIME_CLASS_ANNOTATION = 'rollplane.io/peer-runtime-class';
/** On the DaemonSet: which container is the agent (default: the first). */
export const AGENT_CONTAINER_ANNOTATION = 'rollplane.io/agent-container';
/** The pod readiness gate rollplane adds to the template and satisfies once the node's peer pods are back. */
export const PEER_PODS_READY = 'rollplane.io/peer-pods-ready';
/** On the DaemonSet while a rollout drives it: its `spec.updateStrategy` from before (JSON), restored at the end. */
export const ORIGINAL_STRATEGY_ANNOTATION = 'rollplane.io/original-update-strategy';
/** On the DaemonSet while a rollout drives it: whether rollplane added the readiness gate (so only it removes it). */
export const GATE_ADDED_ANNOTATION = 'rollplane.io/readiness-gate-added';
/** On the DaemonSet: the rollout driving it now. */
export const ROLLOUT_ANNOTATION = 'rollplane.io/rollout';
/** On the DaemonSet: the peer runtime class the running rollout gates on (the gate controller reads it). */
export const GATE_RUNTIME_CLASS_ANNOTATION = 'rollplane.io/gate-peer-runtime-class';
/** On an old agent handed over in SURGE mode (out of the DaemonSet, still running): the DaemonSet's name. */
export const RETIRING_LABEL = 'rollplane.io/retiring-agent';
/** On a retiring agent: its labels before the handover (JSON). */
export const RETIRING_LABELS_ANNOTATION = 'rollplane.io/retired-labels';
/** Field manager of rollplane's writes. */
export const FIELD_MANAGER = 'rollplane-node-agent';
