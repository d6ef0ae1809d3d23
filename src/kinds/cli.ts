/**
 * The registered rollout kinds' parts of the CLI (ADR 0045): the CLI's list of kinds. Apart from src/kinds/index.ts
 * (the server's) so that the CLI loads only the kinds' `cli.ts` (CLI helpers and the contracts' numbers), not their
 * controllers; a test checks that both list the same kinds.
 */
import type { BumpSubcommand } from '../cli/commands/bump.js';
import type { AnyFleetPart } from '../cli/fleet.js';
import { agentPoolBump, agentPoolFleet } from './agentPool/cli.js';
import { nodeAgentBump, nodeAgentFleet } from './nodeAgent/cli.js';
import { virtualClusterBump, virtualClusterFleet } from './virtualCluster/cli.js';

/** Each kind's `rollplane bump` subcommand, in the order `rollplane bump --help` lists them. */
export const KIND_BUMP_SUBCOMMANDS: readonly BumpSubcommand[] = [agentPoolBump, nodeAgentBump, virtualClusterBump];

/**
 * Each kind's part of `rollplane fleet`, in the order it shows them: the KIND table's rows, the kinds' own tables and
 * the answer's fields (`-o json`) follow it. Not the bump order: the summary's order predates the list.
 */
export const KIND_FLEET_PARTS: readonly AnyFleetPart[] = [agentPoolFleet, virtualClusterFleet, nodeAgentFleet];
