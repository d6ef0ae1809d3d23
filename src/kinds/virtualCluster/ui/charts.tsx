import { useMemo } from 'react';
import uPlot from 'uplot';
import { DENSE, HEIGHT, PALETTE, buildHistogram, paddedTime, pointSeries, secondsAxis } from '../../../ui/client/Charts.js';
import { QueryStatus, ScrollRegion, Section } from '../../../ui/client/components.js';
import { formatSeconds, percentile } from '../../../ui/client/format.js';
import { useLiveSeries, useQuery } from '../../../ui/client/hooks.js';
import { UPlotChart } from '../../../ui/client/UPlotChart.js';
import { UPGRADE_DURATIONS, type UpgradeObservation } from './queries.js';
import { clusterUpgrades } from './upgrades.js';

/**
 * The Charts page's sections of virtual clusters: their upgrade durations over time and their distribution (from the
 * live series), and the server's statistics over the whole history.
 */
export function UpgradeCharts() {
  const observations = useLiveSeries(clusterUpgrades);
  return (
    <>
      <UpgradeDurationsOverTime observations={observations} />
      <UpgradeDistribution observations={observations} />
      <ServerUpgradeStats />
    </>
  );
}

/** clusters_upgrade_seconds per cluster version over time: one point series per version on a shared time axis. */
function UpgradeDurationsOverTime({ observations }: { observations: readonly UpgradeObservation[] }) {
  const versions = useMemo(() => [...new Set(observations.map((o) => o.clusterVersion))].sort(), [observations]);
  const versionsKey = versions.join('\n');
  const dense = observations.length > DENSE;
  const options = useMemo<Omit<uPlot.Options, 'width'>>(
    () => ({
      height: HEIGHT,
      scales: { x: paddedTime },
      series: [
        { label: 'time' },
        ...versionsKey
          .split('\n')
          .filter(Boolean)
          .map((v, i) => pointSeries(v, PALETTE[i % PALETTE.length]!, dense)),
      ],
      axes: [{}, secondsAxis],
      legend: { live: true },
    }),
    [versionsKey, dense],
  );
  const data = useMemo<uPlot.AlignedData>(() => {
    const sorted = [...observations].sort((a, b) => Date.parse(a.observedAt) - Date.parse(b.observedAt));
    const xs = sorted.map((o) => Date.parse(o.observedAt) / 1000);
    const columns = versions.map((v) => sorted.map((o) => (o.clusterVersion === v ? o.seconds : null)));
    return [xs, ...columns];
  }, [observations, versions]);

  return (
    <Section id="upgrade-time" title="Cluster upgrade duration over time (clusters_upgrade_seconds)">
      {observations.length === 0 ? (
        <p className="muted">No cluster upgrade observations yet.</p>
      ) : (
        <UPlotChart
          options={options}
          data={data}
          label={`Upgrade durations of ${observations.length} observations for ${versions.length} cluster versions over time`}
        />
      )}
    </Section>
  );
}

/** A histogram of all observations, and per-version percentiles computed from what the page holds. */
function UpgradeDistribution({ observations }: { observations: readonly UpgradeObservation[] }) {
  const stats = useMemo(() => perVersionStats(observations), [observations]);
  const histogram = useMemo(() => buildHistogram(observations.map((o) => o.seconds)), [observations]);
  const options = useMemo<Omit<uPlot.Options, 'width'>>(
    () => ({
      height: HEIGHT,
      scales: { x: { time: false } },
      series: [
        { label: 'seconds', value: (_u, v) => (v === null ? '—' : `≥ ${formatSeconds(v)}`) },
        {
          label: 'upgrades',
          stroke: PALETTE[0],
          fill: 'rgba(37, 99, 235, 0.35)',
          paths: uPlot.paths.bars!({ size: [0.9, 80], align: 1 }),
          points: { show: false },
        },
      ],
      axes: [{ label: 'seconds', values: (_u, ticks) => ticks.map((t) => `${t}s`) }, { label: 'upgrades' }],
    }),
    [],
  );
  return (
    <Section id="upgrade-distribution" title="Cluster upgrade duration distribution">
      {observations.length === 0 ? (
        <p className="muted">No cluster upgrade observations yet.</p>
      ) : (
        <>
          <UPlotChart options={options} data={histogram} label={`Histogram of ${observations.length} upgrade durations`} />
          <ScrollRegion label="Upgrade durations per cluster version">
            <table className="data" aria-label="Upgrade durations per cluster version">
              <thead>
                <tr>
                  <th scope="col">Cluster version</th>
                  <th scope="col">Observations</th>
                  <th scope="col">Failed</th>
                  <th scope="col">p50</th>
                  <th scope="col">p95</th>
                  <th scope="col">Max</th>
                </tr>
              </thead>
              <tbody>
                {stats.map((s) => (
                  <tr key={s.clusterVersion} data-cluster-version={s.clusterVersion}>
                    <td>{s.clusterVersion}</td>
                    <td className="observation-count">{s.count}</td>
                    <td>{s.failed}</td>
                    <td>{formatSeconds(s.p50)}</td>
                    <td>{formatSeconds(s.p95)}</td>
                    <td>{formatSeconds(s.max)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </ScrollRegion>
        </>
      )}
    </Section>
  );
}

/** The server's statistics over the whole history (the charts hold only the recent window). */
function ServerUpgradeStats() {
  const query = useQuery(UPGRADE_DURATIONS, {}, { pollMs: 15_000 });
  const rows = query.data?.clusterUpgradeDurations;
  return (
    <Section id="upgrade-stats" title="Upgrade durations over the whole history">
      <QueryStatus error={query.error} loading={query.loading} hasData={!!rows} what="upgrade duration statistics">
        {rows && rows.length === 0 ? (
          <p className="muted">No upgrades recorded.</p>
        ) : (
          <ScrollRegion label="Upgrade duration statistics over the whole history">
            <table className="data" aria-label="Upgrade duration statistics over the whole history">
              <thead>
                <tr>
                  <th scope="col">Cluster version</th>
                  <th scope="col">Observations</th>
                  <th scope="col">Failed</th>
                  <th scope="col">p50</th>
                  <th scope="col">p95</th>
                  <th scope="col">Max</th>
                </tr>
              </thead>
              <tbody>
                {rows?.map((s) => (
                  <tr key={s.clusterVersion}>
                    <td>{s.clusterVersion}</td>
                    <td>{s.count}</td>
                    <td>{s.failed}</td>
                    <td>{formatSeconds(s.p50Seconds)}</td>
                    <td>{formatSeconds(s.p95Seconds)}</td>
                    <td>{formatSeconds(s.maxSeconds)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </ScrollRegion>
        )}
      </QueryStatus>
    </Section>
  );
}

function perVersionStats(observations: readonly UpgradeObservation[]) {
  const byVersion = new Map<string, UpgradeObservation[]>();
  for (const o of observations) {
    const list = byVersion.get(o.clusterVersion);
    if (list) list.push(o);
    else byVersion.set(o.clusterVersion, [o]);
  }
  return [...byVersion.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([clusterVersion, list]) => {
      const seconds = list.map((o) => o.seconds).sort((a, b) => a - b);
      return {
        clusterVersion,
        count: list.length,
        failed: list.filter((o) => o.outcome === 'FAILED').length,
        p50: percentile(seconds, 50),
        p95: percentile(seconds, 95),
        max: seconds[seconds.length - 1] ?? null,
      };
    });
}
