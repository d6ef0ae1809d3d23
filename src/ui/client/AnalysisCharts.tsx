import { useEffect, useMemo } from 'react';
import type uPlot from 'uplot';
import { PALETTE, paddedTime } from './Charts.js';
import { QueryStatus } from './components.js';
import { RolloutGateAnalysisDocument } from './generated/graphql.js';
import { useQuery } from './hooks.js';
import { type MetricChart, metricCharts } from './analysisModel.js';
import { UPlotChart } from './UPlotChart.js';

/** Measurements arrive without an event of their own: a waiting analysis is read again this often. */
const POLL_MS = 5_000;
const HEIGHT = 180;

/**
 * An ANALYSIS gate's latest attempt (issue 33, docs/analysis.md): its phase and, per metric, a chart of every
 * measurement's first value over time with the threshold its condition compares with drawn as a line (and the
 * baseline's value, when the metric compares with the targets not yet upgraded), and how many of each verdict.
 */
export function AnalysisCharts({ rolloutId, gateKey, waiting, changes }: { rolloutId: string; gateKey: string; waiting: boolean; changes: number }) {
  const query = useQuery(RolloutGateAnalysisDocument, { id: rolloutId, gate: gateKey }, waiting ? { pollMs: POLL_MS } : {});
  const { reload } = query;
  useEffect(() => {
    if (changes > 0) reload();
  }, [changes, reload]);
  const run = query.data?.rollout?.gate?.analysisRuns.at(-1);
  const charts = useMemo(() => metricCharts(run?.measurements ?? []), [run]);
  return (
    <QueryStatus error={query.error} loading={query.loading} hasData={query.data !== undefined} what={`the analysis of gate ${gateKey}`}>
      {!run ? (
        <p className="muted small">No analysis run yet.</p>
      ) : (
        <div className="analysis" data-analysis-phase={run.phase}>
          <p className="small">
            Attempt {run.attempt} of template <code>{run.templateName}</code>: <code>{run.phase}</code>
            {run.message && <> · {run.message}</>}
          </p>
          {charts.map((chart) => (
            <MetricChartView key={chart.metric} chart={chart} />
          ))}
        </div>
      )}
    </QueryStatus>
  );
}

function MetricChartView({ chart }: { chart: MetricChart }) {
  const threshold = chart.threshold?.find((t) => t !== null);
  const hasThreshold = !!chart.threshold;
  const hasBaseline = !!chart.baseline;
  const options = useMemo<Omit<uPlot.Options, 'width'>>(
    () => ({
      height: HEIGHT,
      scales: { x: paddedTime },
      series: [
        {},
        { label: chart.metric, stroke: PALETTE[0], width: 2, points: { show: true, size: 6 } },
        ...(hasThreshold ? [{ label: 'threshold', stroke: PALETTE[1], width: 2, dash: [6, 4], points: { show: false } }] : []),
        ...(hasBaseline ? [{ label: 'baseline', stroke: PALETTE[2], width: 1, points: { show: true, size: 4 } }] : []),
      ],
    }),
    [chart.metric, hasThreshold, hasBaseline],
  );
  const data = [chart.x, chart.value, ...(chart.threshold ? [chart.threshold] : []), ...(chart.baseline ? [chart.baseline] : [])] as uPlot.AlignedData;
  const verdicts = Object.entries(chart.verdicts)
    .map(([verdict, count]) => `${verdict} × ${count}`)
    .join(', ');
  return (
    <figure className="metric-chart" data-metric={chart.metric} data-threshold={threshold ?? ''}>
      <figcaption className="small">
        <code>{chart.metric}</code>
        {chart.condition && <> · {chart.condition}</>} · {chart.x.length} measurement{chart.x.length === 1 ? '' : 's'}: {verdicts}
      </figcaption>
      <UPlotChart
        options={options}
        data={data}
        label={`Measurements of ${chart.metric}${threshold !== undefined ? ` against the threshold ${threshold}` : ''}: ${chart.value.map((v) => v ?? 'no data').join(', ')}`}
      />
    </figure>
  );
}
