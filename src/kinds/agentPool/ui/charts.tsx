import { useMemo } from 'react';
import type uPlot from 'uplot';
import { DENSE, HEIGHT, PALETTE, paddedTime, pointSeries, secondsAxis } from '../../../ui/client/Charts.js';
import { Section } from '../../../ui/client/components.js';
import { formatSeconds, percentile } from '../../../ui/client/format.js';
import { useLiveSeries } from '../../../ui/client/hooks.js';
import { UPlotChart } from '../../../ui/client/UPlotChart.js';
import { agentRecreations } from './recreations.js';

/** The Charts page's section of agent pools: how long each agent recreation took, over time. */
export function RecreationDurations() {
  const recreations = useLiveSeries(agentRecreations);
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
