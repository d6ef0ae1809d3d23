import { Registry } from 'prom-client';

/**
 * The member clusters' runtime metrics on /metrics (docs/adr/0060-member-metrics-routing-and-caps.md).
 *
 * Each member's runtime registers the kinds' and the runtime's metrics (workqueue_*, controller_runtime_*,
 * rollplane_agent_*, …) in a registry of its own, since one registry refuses a second metric of a name. This keeps
 * those registries, each labelled `cluster=<member>` (prom-client's default labels: every series it renders carries
 * it), and renders them into the app's exposition: a family that `local` has too gets the members' series appended
 * under its one HELP/TYPE (a family twice in one exposition is invalid), a family only members have is appended whole.
 *
 * `local`'s series are rendered exactly as before, without a `cluster` label (dashboards select them as they always
 * did; `cluster=""` selects `local` alone). The label is bounded by the registered clusters: a registry exists only
 * while its member's runtime runs and is released when it stops, with its series.
 */
export class ClusterRegistries {
  private readonly byCluster = new Map<string, Registry>();

  /** A fresh registry for `cluster`'s runtime, replacing any one it had; its series are labelled with the cluster. */
  registryFor(cluster: string): Registry {
    const registry = new Registry();
    registry.setDefaultLabels({ cluster });
    this.byCluster.set(cluster, registry);
    return registry;
  }

  /** The runtime that owned `registry` stopped: its series leave /metrics (unless a newer runtime replaced it). */
  release(cluster: string, registry: Registry): void {
    if (this.byCluster.get(cluster) === registry) this.byCluster.delete(cluster);
  }

  /** The clusters with a registry (tests, diagnostics). */
  clusters(): string[] {
    return [...this.byCluster.keys()].sort();
  }

  /** `main`'s exposition with every member's series merged in, family by family. */
  async render(main: Registry): Promise<string> {
    if (this.byCluster.size === 0) return main.metrics();
    const members = [...this.byCluster.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, registry]) => registry);
    const names = new Set(main.getMetricsAsArray().map((m) => m.name));
    for (const registry of members) for (const m of registry.getMetricsAsArray()) names.add(m.name);
    const families: string[] = [];
    for (const name of names) {
      const parts: string[] = [];
      let header = false;
      for (const registry of [main, ...members]) {
        if (!registry.getSingleMetric(name)) continue;
        const text = await registry.getSingleMetricAsString(name);
        // Each rendering starts with its HELP and TYPE lines: the family keeps the first, the others add series only.
        parts.push(header ? text.split('\n').slice(2).join('\n') : text);
        header = true;
      }
      families.push(parts.filter((p) => p.length > 0).join('\n'));
    }
    return `${families.join('\n\n')}\n`;
  }
}
