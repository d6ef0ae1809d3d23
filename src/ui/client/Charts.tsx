import { useMemo } from 'react';
import uPlot from 'uplot';
import { PageTitle, QueryStatus, ScrollRegion, Section } from './components.js';
import { formatSeconds, percentile } from './format.js';
import { useLive, useQuery } from './hooks.js';
import { UPGRADE_DURATIONS } from './queries.js';
import type { AgentRecreation, UpgradeObservation } from './types.js';
import { UPlotChart } from './UPlotChart.js';

const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#ca8a04', '#db2777'];
const HEIGHT = 260;

export function Charts() {
  const live = useLive();
  return (
    <div className="charts">
      <PageTitle>Charts</PageTitle>
      <UpgradeDurationsOverTime observations={live.observations} />
      <UpgradeDistribution observations={live.observations} />
      <RecreationDurations recreations={live.recreations} />
      <ServerUpgradeStats />
    </div>
  );
}

/**
 * A time scale padded on both sides: points at the first and last instant stay off the frame, and uPlot, which draws
 * only indexes inside the scale, keeps every point of several observations sharing the last timestamp.
 */
const paddedTime: uPlot.Scale = {
  time: true,
  range: (_u, min, max) => {
    const pad = Math.max(1, (max - min) * 0.03);
    return [min - pad, max + pad];
  },
};

const secondsAxis: uPlot.Axis = { label: 'seconds', values: (_u, ticks) => ticks.map((t) => `${t}s`), size: 60 };

/** Points only (no lines between observations); smaller once there are many. */
function pointSeries(label: string, color: string, dense: boolean): uPlot.Series {
  const size = dense ? 4 : 7;
  return {
    label,
    stroke: color,
    fill: color,
    width: 0,
    paths: () => null,
    points: { show: true, size, stroke: color, fill: color },
    value: (_u, v) => formatSeconds(v),
  };
}

const DENSE = 300;

/** clusters_upgrade_seconds per cluster version over time: one point series per version on a shared time axis. */
function UpgradeDurationsOverTime({ observations }: { observations: UpgradeObservation[] }) {
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
function UpgradeDistribution({ observations }: { observations: UpgradeObservation[] }) {
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

function RecreationDurations({ recreations }: { recreations: AgentRecreation[] }) {
  const timed = useMemo(() => recreations.filter((r) => r.seconds !== null && r.readyAt), [recreations]);
  const dense = timed.length > DENSE;
  const options = useMemo<Omit<uPlot.Options, 'width'>>(
    () => ({ height: HEIGHT, scales: { x: paddedTime }, series: [{ label: 'time' }, pointSeries('recreation', PALETTE[2]!, dense)], axes: [{}, secondsAxis] }),
    [dense],
  );
  const data = useMemo<uPlot.AlignedData>(() => {
    const sorted = [...timed].sort((a, b) => Date.parse(a.readyAt!) - Date.parse(b.readyAt!));
    return [sorted.map((r) => Date.parse(r.readyAt!) / 1000), sorted.map((r) => r.seconds)];
  }, [timed]);
  const seconds = timed.map((r) => r.seconds!).sort((a, b) => a - b);
  return (
    <Section id="recreation-time" title="Agent recreation duration (old agent deleted → new agent Ready)">
      {timed.length === 0 ? (
        <p className="muted">No agent recreations yet.</p>
      ) : (
        <>
          <UPlotChart options={options} data={data} label={`Durations of ${timed.length} agent recreations over time`} />
          <p className="small">
            {timed.length} recreations · p50 {formatSeconds(percentile(seconds, 50))} · p95 {formatSeconds(percentile(seconds, 95))} · max{' '}
            {formatSeconds(seconds[seconds.length - 1])}
          </p>
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

function perVersionStats(observations: UpgradeObservation[]) {
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

/** Equal-width bins (about √n of them, 5 to 30) from 0 to the largest value; x is each bin's lower edge. */
export function buildHistogram(values: readonly number[]): uPlot.AlignedData {
  if (values.length === 0) return [[], []];
  const max = Math.max(...values);
  const bins = Math.min(30, Math.max(5, Math.ceil(Math.sqrt(values.length))));
  const width = max > 0 ? niceStep(max / bins) : 1;
  const count = Math.max(1, Math.ceil((max + Number.EPSILON) / width));
  const counts = new Array<number>(count).fill(0);
  for (const v of values) counts[Math.min(count - 1, Math.floor(v / width))]!++;
  // A trailing empty bin so the last bar is drawn whole inside the x range.
  counts.push(0);
  return [counts.map((_, i) => i * width), counts];
}

function niceStep(raw: number): number {
  const power = 10 ** Math.floor(Math.log10(raw));
  const scaled = raw / power;
  return (scaled <= 1 ? 1 : scaled <= 2 ? 2 : scaled <= 5 ? 5 : 10) * power;
}
