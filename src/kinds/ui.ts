/**
 * The registered rollout kinds' parts of the web UI (ADR 0052): the UI's list of kinds. Apart from src/kinds/index.ts
 * (the server's) and cli.ts (the CLI's) so that the browser bundle loads only the kinds' `ui/` folders, which import
 * the shared UI and nothing of the server; a test checks that every list names every kind folder.
 */
import type { KindUi } from '../ui/client/kindUi.js';
import { agentPoolUi } from './agentPool/ui/index.js';
import { nodeAgentUi } from './nodeAgent/ui/index.js';
import { virtualClusterUi } from './virtualCluster/ui/index.js';

/**
 * Each kind's views, in the order the UI lists them: kind filters, Fleet sections, live feed filter, Charts sections.
 * (This order, not the server's, keeps the pages as they were before the views moved into the kinds.)
 */
export const KIND_UIS: readonly KindUi[] = [agentPoolUi, virtualClusterUi, nodeAgentUi];
