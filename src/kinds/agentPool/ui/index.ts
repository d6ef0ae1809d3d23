import type { KindUi } from '../../../ui/client/kindUi.js';
import { AgentPools } from './AgentPools.js';
import { RecreationDurations } from './charts.js';
import { agentRecreations } from './recreations.js';

/** The agent pools' part of the web UI (ADR 0052), registered in src/kinds/ui.ts. */
export const agentPoolUi: KindUi = {
  kind: 'AGENT_POOL',
  label: 'Agent pools',
  target: 'pool',
  eventTypes: ['AgentRecreated', 'AgentForceDeleted', 'UpstreamControllerChanged'],
  Fleet: AgentPools,
  live: [agentRecreations],
  Charts: RecreationDurations,
};
