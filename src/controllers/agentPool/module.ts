import { KIND_CONTRACTS } from '../../domain/kinds/index.js';
import type { RolloutKindModule } from '../kindModule.js';
import { setupAgentPools } from './index.js';

/** The AGENT_POOL rollout kind — agent pools (IPPools' DHCP agents) — as registered (ADR 0041). */
export const agentPoolKind: RolloutKindModule<'AGENT_POOL'> = {
  kind: 'AGENT_POOL',
  contract: KIND_CONTRACTS.AGENT_POOL,
  setup(host) {
    const runtime = setupAgentPools(host, { ...host.config.agentPools });
    return { driver: runtime.driver, queries: { agentPools: runtime.queries } };
  },
};
