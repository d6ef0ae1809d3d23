import { parse as parseYaml } from 'yaml';
import { deepEqual } from '../../store/objects.js';
import type { KubeObject, ResourceType, StoreEvent } from '../../types.js';
import type { Controller } from '../ControllerRuntime.js';
import type { BehaviourContext } from '../context.js';
import { isoTime, keyOf, splitKey } from '../kube.js';
import { CHART_KINDS, helmUninstall, renderVmDhcpChart, VM_DHCP_CHART } from './vmDhcpChart.js';

/**
 * Harvester's add-on controller with the helm-controller behind it, for the one chart the simulator can render: the
 * vm-dhcp-controller (harvester/harvester `pkg/controller/master/addon/{addon,addon_processing,common,helmchart}.go`;
 * k3s-io/helm-controller runs `helm upgrade --install` of the HelmChart the add-on controller writes). An enabled
 * Addon whose spec (chart, repo, version, valuesContent) differs from what was last installed is rendered — values
 * from `valuesContent` (YAML; empty means the chart's defaults), images defaulting to the chart version — and applied
 * as Helm upgrades a release: every rendered field is put back to the chart's value, so a `--image` someone patched
 * into the Deployment by hand is reverted by the next add-on change, and survives until then. A disabled Addon is
 * `helm uninstall`ed. The release is the Addon's name, in its namespace. Status as upstream: `AddonDeploySuccessful`,
 * `AddonDisabled`, or the `OperationFailed` condition with the error.
 * Left out: the HelmChart object and its Job (the simulator renders in-process), other charts (ignored), the
 * InProgress/Enabling intermediate states, Helm's three-way handling of fields removed from the chart.
 */
export class HarvesterAddons implements Controller {
  readonly name = 'upstream:harvester-addons';
  /** Addon key → the spec last installed (what the HelmChart would hold). */
  private readonly installed = new Map<string, string>();

  constructor(private readonly ctx: BehaviourContext) {}

  get delayMs(): number {
    return this.ctx.delays.controllerMs;
  }

  keysFor(event: StoreEvent): string[] {
    const { group, plural } = event.resource;
    return group === 'harvesterhci.io' && plural === 'addons' ? [keyOf(event.object)] : [];
  }

  initialKeys(): string[] {
    const type = this.type();
    return type ? this.ctx.store.list(type).map(keyOf) : [];
  }

  reconcile(key: string): number | undefined {
    const type = this.type();
    if (!type) return undefined;
    const { namespace, name } = splitKey(key);
    const addon = this.ctx.store.get(type, namespace, name);
    if (!addon) {
      this.installed.delete(key);
      return undefined;
    }
    const spec = addon.spec ?? {};
    if (spec.chart !== VM_DHCP_CHART) return undefined;
    const signature = JSON.stringify({ enabled: spec.enabled, chart: spec.chart, repo: spec.repo, version: spec.version, values: spec.valuesContent });
    if (this.installed.get(key) === signature) return undefined;
    if (spec.enabled !== true) {
      helmUninstall(this.ctx.store, name, namespace);
      this.installed.set(key, signature);
      this.setStatus(type, addon, 'AddonDisabled', undefined);
      return undefined;
    }
    let values: unknown;
    try {
      values = parseYaml(String(spec.valuesContent ?? '')) ?? {};
    } catch (error) {
      this.setStatus(type, addon, '', `error generating default values of addon ${namespace}/${name}: ${(error as Error).message}`);
      return undefined;
    }
    const version = String(spec.version ?? '');
    const rendered = renderVmDhcpChart({
      release: name,
      ...(namespace ? { namespace } : {}),
      chartVersion: version,
      appVersion: version.startsWith('v') ? version : `v${version}`,
      values,
    });
    applyRelease(this.ctx.store, rendered);
    this.installed.set(key, signature);
    this.setStatus(type, addon, 'AddonDeploySuccessful', undefined);
    return undefined;
  }

  private setStatus(type: ResourceType, addon: KubeObject, state: string, failure: string | undefined): void {
    const now = isoTime(this.ctx.scheduler.now());
    const condition = failure
      ? { type: 'OperationFailed', status: 'True', reason: 'Error', message: failure, lastUpdateTime: now }
      : { type: 'Completed', status: 'True', lastUpdateTime: now };
    const status = { ...(state ? { status: state } : {}), conditions: [condition] };
    const current = this.ctx.store.get(type, addon.metadata.namespace, addon.metadata.name);
    if (!current || deepEqual({ ...status, conditions: [] }, { ...current.status, conditions: [] })) return;
    this.ctx.store.update(type, { ...current, status }, 'status');
  }

  private type(): ResourceType | undefined {
    return this.ctx.store.resourceType('harvesterhci.io', 'addons');
  }
}

/**
 * Helm's upgrade of a release, reduced: creates what is missing, and brings every field the chart renders back to
 * the rendered value (maps merged key by key, lists replaced, as a JSON merge patch would), leaving fields the chart
 * does not render (status, defaults the API server filled in) as they are.
 */
export function applyRelease(store: BehaviourContext['store'], objects: KubeObject[]): void {
  for (const object of objects) {
    const where = CHART_KINDS[object.kind!]!;
    const type = store.resourceType(where.group, where.plural)!;
    const live = store.get(type, object.metadata.namespace, object.metadata.name);
    if (!live) {
      store.create(type, object);
      continue;
    }
    const merged = mergeInto(structuredClone(live), object) as KubeObject;
    if (!deepEqual(merged, live)) store.update(type, merged);
  }
}

function mergeInto(target: unknown, source: unknown): unknown {
  if (typeof source !== 'object' || source === null || Array.isArray(source)) return structuredClone(source);
  const out = (typeof target === 'object' && target !== null && !Array.isArray(target) ? target : {}) as Record<string, unknown>;
  for (const [k, v] of Object.entries(source as Record<string, unknown>)) out[k] = mergeInto(out[k], v);
  return out;
}
