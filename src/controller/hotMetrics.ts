import type { Registry } from 'prom-client';

/**
 * Minimal counter / gauge / histogram families for the work queue's hot path, registered in a prom-client Registry
 * as ordinary metrics. prom-client hashes and validates label objects on every inc/observe (~0.5 µs each), which at
 * several observations per key dominated the queue's cost; these children are plain fields updated in place and
 * formatted only when the registry is scraped. Label values are fixed when a child is created.
 */

interface MetricValue {
  value: number;
  labels: Record<string, string | number>;
  metricName?: string;
}

abstract class Family<C> {
  readonly aggregator = 'sum';
  protected readonly children = new Map<string, { labels: Record<string, string>; child: C }>();

  constructor(
    registry: Registry,
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'gauge' | 'histogram',
    protected readonly labelNames: readonly string[],
  ) {
    // prom-client formats any object with name/help/type/get(); the Metric class type is nominal only.
    registry.registerMetric(this as never);
  }

  /** The child for these label values (in labelNames order), created at zero on first use. */
  child(...labelValues: string[]): C {
    const key = labelValues.join('\u0000');
    let entry = this.children.get(key);
    if (!entry) {
      const labels = Object.fromEntries(this.labelNames.map((n, i) => [n, labelValues[i] ?? '']));
      entry = { labels, child: this.newChild() };
      this.children.set(key, entry);
    }
    return entry.child;
  }

  /** The first label's value of every child (e.g. every queue name seen). */
  labelValues(): string[] {
    return [...this.children.values()].map((e) => e.labels[this.labelNames[0]!] ?? '');
  }

  protected abstract newChild(): C;
  protected abstract values(): MetricValue[];
  abstract reset(): void;

  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: MetricValue[] }> {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.values() };
  }
}

/** A counter (only ever `value++` / `value += n`) or a gauge (any assignment). */
export class HotValue {
  value = 0;
}

export class ValueFamily extends Family<HotValue> {
  constructor(registry: Registry, type: 'counter' | 'gauge', name: string, help: string, labelNames: readonly string[]) {
    super(registry, name, help, type, labelNames);
  }
  protected newChild(): HotValue {
    return new HotValue();
  }
  protected values(): MetricValue[] {
    return [...this.children.values()].map(({ labels, child }) => ({ value: child.value, labels }));
  }
  reset(): void {
    for (const { child } of this.children.values()) child.value = 0;
  }
}

export class HotHistogram {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length);
  }

  observe(v: number): void {
    this.sum += v;
    this.count++;
    const b = this.bounds;
    for (let i = 0; i < b.length; i++) {
      if (v <= b[i]!) {
        this.counts[i]!++;
        return;
      }
    }
  }
}

export class HistogramFamily extends Family<HotHistogram> {
  constructor(
    registry: Registry,
    name: string,
    help: string,
    labelNames: readonly string[],
    private readonly buckets: readonly number[],
  ) {
    super(registry, name, help, 'histogram', labelNames);
  }
  protected newChild(): HotHistogram {
    return new HotHistogram(this.buckets);
  }
  protected values(): MetricValue[] {
    const out: MetricValue[] = [];
    for (const { labels, child: h } of this.children.values()) {
      let cumulative = 0;
      this.buckets.forEach((le, i) => {
        cumulative += h.counts[i]!;
        out.push({ value: cumulative, labels: { le, ...labels }, metricName: `${this.name}_bucket` });
      });
      out.push({ value: h.count, labels: { le: '+Inf', ...labels }, metricName: `${this.name}_bucket` });
      out.push({ value: h.sum, labels, metricName: `${this.name}_sum` });
      out.push({ value: h.count, labels, metricName: `${this.name}_count` });
    }
    return out;
  }
  reset(): void {
    for (const { child: h } of this.children.values()) {
      h.counts.fill(0);
      h.sum = 0;
      h.count = 0;
    }
  }
}
