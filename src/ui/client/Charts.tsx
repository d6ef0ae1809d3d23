import type uPlot from 'uplot';
import { PageTitle } from './components.js';
import { formatSeconds } from './format.js';
import { useKinds } from './kindUi.js';

/** The Charts page's colours, sizes and scales, shared by the kinds' charts (KindUi.Charts). */
export const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#ca8a04', '#db2777'];
export const HEIGHT = 260;

/** Each kind's charts (KindUi.Charts), in the kinds' order. */
export function Charts() {
  const kinds = useKinds();
  return (
    <div className="charts">
      <PageTitle>Charts</PageTitle>
      {kinds.map(({ kind, Charts: KindCharts }) => KindCharts && <KindCharts key={kind} />)}
    </div>
  );
}

/**
 * A time scale padded on both sides: points at the first and last instant stay off the frame, and uPlot, which draws
 * only indexes inside the scale, keeps every point of several observations sharing the last timestamp.
 */
export const paddedTime: uPlot.Scale = {
  time: true,
  range: (_u, min, max) => {
    const pad = Math.max(1, (max - min) * 0.03);
    return [min - pad, max + pad];
  },
};

export const secondsAxis: uPlot.Axis = { label: 'seconds', values: (_u, ticks) => ticks.map((t) => `${t}s`), size: 60 };

/** Points only (no lines between observations); smaller once there are many. */
export function pointSeries(label: string, color: string, dense: boolean): uPlot.Series {
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

/** Above this many points, smaller ones. */
export const DENSE = 300;

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
