/**
 * The registered rollout kinds' parts of the CLI (ADR 0045): the CLI's list of kinds. Apart from src/kinds/index.ts
 * (the server's) so that the CLI loads only the kinds' `cli.ts` (CLI helpers and the contracts' numbers), not their
 * controllers; a test checks that both list the same kinds.
 */
import type { BumpSubcommand } from '../cli/commands/bump.js';
import { agentPoolBump } from './agentPool/cli.js';
import { nodeAgentBump } from './nodeAgent/cli.js';
import { virtualClusterBump } from './virtualCluster/cli.js';

/** Each kind's `rollplane bump` subcommand, in the order `rollplane bump --help` lists them. */
export const KIND_BUMP_SUBCOMMANDS: readonly BumpSubcommand[] = [agentPoolBump, nodeAgentBump, virtualClusterBump];
