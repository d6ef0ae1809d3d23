/** Small helpers over Kubernetes objects shared by the simulated kubelet and workload controllers. */
import { createHash, randomInt } from 'node:crypto';
import type { KubeObject, OwnerReference } from '../types.js';
import { canonicalJson } from '../../util/canonicalJson.js';

export function keyOf(obj: KubeObject): string {
  return obj.metadata.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : obj.metadata.name;
}

export function splitKey(key: string): { namespace: string | undefined; name: string } {
  const slash = key.indexOf('/');
  return slash < 0 ? { namespace: undefined, name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

export function controllerRef(obj: KubeObject): OwnerReference | undefined {
  return obj.metadata.ownerReferences?.find((ref) => ref.controller);
}

export function ownerRefTo(owner: KubeObject): OwnerReference {
  return {
    apiVersion: owner.apiVersion,
    kind: owner.kind,
    name: owner.metadata.name,
    uid: owner.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  lastProbeTime?: string | null;
  lastUpdateTime?: string;
}

export function conditionOf(obj: KubeObject | undefined, type: string): Condition | undefined {
  const conditions: Condition[] | undefined = obj?.status?.conditions;
  return conditions?.find((c) => c.type === type);
}

export function isTerminating(obj: KubeObject): boolean {
  return obj.metadata.deletionTimestamp !== undefined && obj.metadata.deletionTimestamp !== null;
}

/** Not being deleted and not finished: the pods a workload controller counts. */
export function isActivePod(pod: KubeObject): boolean {
  const phase = pod.status?.phase;
  return !isTerminating(pod) && phase !== 'Succeeded' && phase !== 'Failed';
}

export function isPodReady(pod: KubeObject): boolean {
  return conditionOf(pod, 'Ready')?.status === 'True';
}

/**
 * Available as Kubernetes means it: active, Ready, and Ready for at least `minReadySeconds`. `recheckInMs` says when a
 * Ready-but-not-yet-available pod becomes available, so a controller can requeue for exactly that moment.
 */
export function podAvailability(pod: KubeObject, minReadySeconds: number, now: number): { available: boolean; recheckInMs?: number } {
  if (!isActivePod(pod)) return { available: false };
  const ready = conditionOf(pod, 'Ready');
  if (ready?.status !== 'True') return { available: false };
  if (!minReadySeconds) return { available: true };
  const since = ready.lastTransitionTime ? Date.parse(ready.lastTransitionTime) : now;
  const due = since + minReadySeconds * 1000;
  return due <= now ? { available: true } : { available: false, recheckInMs: due - now };
}

/**
 * Resolves an IntOrString such as 1, "25%" against `total`. Kubernetes rounds maxSurge up and a Deployment's
 * maxUnavailable down; a DaemonSet rounds both up.
 */
export function scaledValue(value: unknown, total: number, roundUp: boolean, fallback: number | string): number {
  const v = value === undefined || value === null ? fallback : value;
  if (typeof v === 'number') return Math.max(0, Math.trunc(v));
  const text = String(v).trim();
  if (text.endsWith('%')) {
    const percent = Number(text.slice(0, -1));
    if (!Number.isFinite(percent)) return 0;
    const exact = (percent * total) / 100;
    return Math.max(0, roundUp ? Math.ceil(exact - 1e-9) : Math.floor(exact + 1e-9));
  }
  const n = Number(text);
  return Number.isFinite(n) ? Math.max(0, Math.trunc(n)) : 0;
}

/** The alphabet Kubernetes uses for generated names and hashes (no vowels, no look-alike characters). */
const SAFE = 'bcdfghjklmnpqrstvwxz2456789';

/** A short, name-safe hash of a pod template (as `pod-template-hash` / `controller-revision-hash` values look). */
export function templateHash(template: unknown, length = 10): string {
  const digest = createHash('sha256')
    .update(canonicalJson(template ?? {}))
    .digest();
  let out = '';
  for (let i = 0; i < length; i++) out += SAFE[digest[i]! % SAFE.length];
  return out;
}

export function randomSuffix(length = 5): string {
  let out = '';
  for (let i = 0; i < length; i++) out += SAFE[randomInt(SAFE.length)];
  return out;
}

/**
 * RFC 3339 with milliseconds: with zero delays many transitions share a second, and a gate such as "peer pod Ready
 * after the agent's replacement" must still be decidable from timestamps.
 */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}

/** Structural equality of JSON values; `undefined`-valued keys count as absent. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((item, i) => jsonEqual(item, bb[i]));
  }
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  const ak = Object.keys(ra).filter((k) => ra[k] !== undefined);
  const bk = Object.keys(rb).filter((k) => rb[k] !== undefined);
  return ak.length === bk.length && ak.every((k) => jsonEqual(ra[k], rb[k]));
}

/** Labels without one key (e.g. the template hash a controller adds). */
export function withoutLabel(labels: Record<string, string> | undefined, key: string): Record<string, string> {
  const out: Record<string, string> = { ...labels };
  delete out[key];
  return out;
}
