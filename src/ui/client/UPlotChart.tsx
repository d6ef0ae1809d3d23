import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

/**
 * A uPlot chart that follows its container's width. The chart is created when `options` change (series set or
 * axes), and only fed new data otherwise, so live updates do not rebuild the canvas.
 */
export function UPlotChart({ options, data, label }: { options: Omit<uPlot.Options, 'width'>; data: uPlot.AlignedData; label: string }) {
  const container = useRef<HTMLDivElement>(null);
  const chart = useRef<uPlot | null>(null);
  const latestData = useRef(data);
  latestData.current = data;

  useEffect(() => {
    const element = container.current;
    if (!element) return undefined;
    const plot = new uPlot({ ...options, width: Math.max(300, element.clientWidth) }, latestData.current, element);
    chart.current = plot;
    const observer = new ResizeObserver(() => plot.setSize({ width: Math.max(300, element.clientWidth), height: options.height }));
    observer.observe(element);
    return () => {
      observer.disconnect();
      plot.destroy();
      chart.current = null;
    };
  }, [options]);

  useEffect(() => {
    chart.current?.setData(data);
  }, [data]);

  return <div className="chart" ref={container} role="img" aria-label={label} />;
}
