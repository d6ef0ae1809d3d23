import type { KindUi } from '../../../ui/client/kindUi.js';
import { NodeAgentSets } from './NodeAgentSets.js';
import { nodeAgentReplacements } from './replacements.js';

/** The node agents' part of the web UI (ADR 0052), registered in src/kinds/ui.ts. */
export const nodeAgentUi: KindUi = {
  kind: 'NODE_AGENT',
  label: 'Node agents',
  target: 'node',
  eventTypes: ['UpstreamControllerChanged', 'NodeAgentReplaced'],
  Fleet: NodeAgentSets,
  live: [nodeAgentReplacements],
};
