import { StateBadge } from '../../../ui/client/components.js';
import { formatSeconds } from '../../../ui/client/format.js';
import { liveStream } from '../../../ui/client/liveStream.js';
import { SUB_CLUSTER_UPGRADE_OBSERVED, type UpgradeObservation } from './queries.js';

/** Cluster upgrades observed (`clusterUpgradeObserved`): rows of the live feed, and the series of the upgrade charts. */
export const clusterUpgrades = liveStream({
  key: 'cluster',
  label: 'cluster upgrades',
  what: 'cluster upgrades',
  query: SUB_CLUSTER_UPGRADE_OBSERVED,
  select: (data) => data.clusterUpgradeObserved,
  idOf: (item) => Number(item.eventId),
  atOf: (item) => item.observedAt,
  Cells: UpgradeCells,
  series: true,
});

function UpgradeCells({ item: o }: { item: UpgradeObservation }) {
  return (
    <>
      <td>Cluster upgraded</td>
      <td>
        {o.clusterNamespace}/{o.clusterName}
      </td>
      <td>
        {o.clusterVersion} @ {o.resourceVersion} <StateBadge state={o.outcome} />
        {o.error && <span className="error small"> {o.error}</span>}
      </td>
      <td>{formatSeconds(o.seconds)}</td>
    </>
  );
}
