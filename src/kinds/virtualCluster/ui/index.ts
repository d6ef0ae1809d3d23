import type { KindUi } from '../../../ui/client/kindUi.js';
import { UpgradeCharts } from './charts.js';
import { VirtualClusterFleet } from './fleet.js';
import { clusterUpgrades } from './upgrades.js';

/** The virtual clusters' part of the web UI (ADR 0052), registered in src/kinds/ui.ts. */
export const virtualClusterUi: KindUi = {
  kind: 'VIRTUAL_CLUSTER',
  label: 'Virtual clusters',
  target: 'cluster',
  eventTypes: ['ClusterUpgradeObserved'],
  Fleet: VirtualClusterFleet,
  live: [clusterUpgrades],
  Charts: UpgradeCharts,
};
