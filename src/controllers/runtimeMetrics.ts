import { Counter, Gauge, type Registry } from 'prom-client';
import type { Manager } from '../controller/Manager.js';

/**
 * What the runtime metrics of src/controller (workqueue_depth, controller_runtime_active_workers, …) do not show but an
 * operator needs to tell whether the controllers have caught up with the cluster and have nothing left to do:
 * - `rollplane_informer_resource_version{informer,resource,label_selector,field_selector}`: the resourceVersion each
 *   informer is current with (watch events and bookmarks), to compare with the API server's; NaN until the informer
 *   has listed, or when the API server's resourceVersions are not integers (Kubernetes only promises opaque strings;
 *   etcd-backed servers and the simulator use integers).
 * - `rollplane_informer_skipped_objects_total{informer}`: objects of a list or watch skipped because they were not
 *   Kubernetes objects (no metadata, an invalid name; a broken or hostile member cluster sends them, ADR 0066).
 * - `rollplane_workqueue_delayed{name}`: keys waiting for an addAfter / addRateLimited delay, which client-go's
 *   workqueue_depth does not count.
 * Every label value comes from code or configuration (informer names, paths and selectors; controller names), never
 * from a request or a cluster object, so the series are a closed set.
 *
 * Registered once per registry (prom-client refuses duplicate names); read from the Manager on every scrape.
 */
const registered = new WeakSet<Registry>();

export function registerRuntimeMetrics(registry: Registry, manager: Pick<Manager, 'informerVersions' | 'snapshots'>): void {
  if (registered.has(registry)) return;
  registered.add(registry);
  new Gauge({
    name: 'rollplane_informer_resource_version',
    help: 'The resourceVersion each informer is current with (NaN before its first list or when not an integer).',
    labelNames: ['informer', 'resource', 'label_selector', 'field_selector'],
    registers: [registry],
    collect() {
      this.reset();
      for (const i of manager.informerVersions()) {
        const rv = i.resourceVersion !== undefined && /^\d+$/.test(i.resourceVersion) ? Number(i.resourceVersion) : Number.NaN;
        this.set({ informer: i.name, resource: i.path, label_selector: i.labelSelector ?? '', field_selector: i.fieldSelector ?? '' }, rv);
      }
    },
  });
  new Counter({
    name: 'rollplane_informer_skipped_objects_total',
    help: 'Objects of a list or watch each informer skipped because they were not Kubernetes objects (missing metadata, an invalid name).',
    labelNames: ['informer'],
    registers: [registry],
    collect() {
      this.reset();
      for (const i of manager.informerVersions()) this.inc({ informer: i.name }, i.skipped);
    },
  });
  new Gauge({
    name: 'rollplane_workqueue_delayed',
    help: 'Keys waiting for their addAfter or rate-limited delay before they are queued, per work queue.',
    labelNames: ['name'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of manager.snapshots()) this.set({ name: s.name }, s.delayed);
    },
  });
}
