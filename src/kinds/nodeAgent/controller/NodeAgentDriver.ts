import type { V1DaemonSet, V1DaemonSetUpdateStrategy, V1Pod } from '@kubernetes/client-node';
import { EventType } from '../../../domain/events.js';
import { parseImageReference } from '../../../util/imageReference.js';
import { nodeAgentSelectorOf, nodeAgentStrategyOf } from '../plan.js';
import type { AdmittedTarget, RolloutDriver, TargetObservation } from '../../../domain/ports.js';
import type { Rollout } from '../../../domain/RolloutService.js';
import { NotFoundError, ValidationError } from '../../../errors.js';
import type { KubeClients } from '../../../kube/index.js';
import type { TargetRef } from '../../../controllers/TargetNotifier.js';
import type { RecordOnce } from '../../../controllers/RecordOnce.js';
import { GATE_ADDED_ANNOTATION, GATE_RUNTIME_CLASS_ANNOTATION, ORIGINAL_STRATEGY_ANNOTATION, PEER_PODS_READY, ROLLOUT_ANNOTATION } from './names.js';
import type { NodeAgentMetrics } from './metrics.js';
import type { NodeAgentCache } from './NodeAgentCache.js';
import {
  agentContainerName,
  availableInMs,
  gateSatisfied,
  hasGate,
  isActive,
  isNodeReady,
  isReady,
  peerGate,
  podImage,
  startFailure,
  templateImage,
} from './podFacts.js';
import { deletePod, patchDaemonSet, readDaemonSet, retirePod } from './writes.js';

export interface NodeAgentDriverDeps {
  clients: KubeClients;
  cache: NodeAgentCache;
  /** Replacement intents: written at admission, before the old agent goes; NodeAgentReplaced removes them. */
  replacements: RecordOnce<Replacement>;
  metrics: NodeAgentMetrics;
  /** Tells the engine a node's target changed (TargetNotifier). */
  notify(ref: TargetRef): void;
  logger?: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void };
  now?: () => number;
}

/** What admission replaces on a node (none: nothing ran there, or the new agent was already up). */
export interface Replacement {
  oldPod: string | null;
  oldImage: string | null;
}

/**
 * What admission means for a node agent (docs/adr/0006-node-agent-gate.md). While a rollout drives a DaemonSet its
 * update strategy is OnDelete, so the DaemonSet controller replaces nothing on its own and the node order is
 * rollplane's; the template carries the new image and the `rollplane.io/peer-pods-ready` readiness gate.
 * - NODE_BY_NODE: admitting a node deletes its old agent; the DaemonSet recreates it from the new template.
 * - SURGE: admitting a node takes its old agent out of the DaemonSet (it keeps running); the DaemonSet starts the new
 *   agent beside it; the old one is deleted once the new one is Ready (see NodeAgentReconciler).
 * The new agent turns Ready only when rollplane opens its gate: agent containers ready and every peer pod on the node
 * Ready again after the agent started. `observe` reports success from the caches, then records NodeAgentReplaced.
 */
export class NodeAgentDriver implements RolloutDriver {
  readonly kind = 'NODE_AGENT' as const;
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly now: () => number;

  constructor(private readonly deps: NodeAgentDriverDeps) {
    this.now = deps.now ?? Date.now;
  }

  async prepare(rollout: Rollout, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    const { namespace, name } = nodeAgentSelectorOf(rollout);
    const ds = await readDaemonSet(this.deps.clients, namespace, name);
    // A rollback of mixed versions has no single image: each admission then sets its target's.
    await this.takeOver(ds, rollout, rollout.toVersion !== null && isImage(rollout.toVersion) ? rollout.toVersion : undefined);
  }

  /**
   * Puts the DaemonSet under the rollout: OnDelete, template image, and (once) the strategy and gate state to restore
   * at the end. Idempotent: a second call (after a crash, or by the next rollout) keeps the saved original.
   *
   * The readiness gate goes into the template only when the original strategy is OnDelete. Under an original
   * RollingUpdate (the cloud-api-adaptor chart) every template change but the image would outlive the rollout: the
   * gate could neither stay (a leftover in the user's template, needing rollplane forever) nor go at the end (removing
   * it changes the template hash, and the restored RollingUpdate would replace every agent once more). There the
   * engine alone holds the next node until this node's peer pods are back (`observe`), and a gate an earlier rollplane
   * left in such a template (`readiness-gate-added: "true"`) is taken out with the image change, which replaces every
   * agent anyway.
   */
  private async takeOver(ds: V1DaemonSet, rollout: Rollout, image: string | undefined): Promise<V1DaemonSet> {
    const annotations = ds.metadata?.annotations ?? {};
    const gates = ds.spec?.template?.spec?.readinessGates ?? [];
    const gated = gates.some((g) => g.conditionType === PEER_PODS_READY);
    const container = agentContainerName(ds);
    if (!container) throw new NotFoundError(`DaemonSet ${ds.metadata?.namespace}/${ds.metadata?.name} has no container`);
    const strategy = nodeAgentStrategyOf(rollout);
    const original = parseStrategy(annotations[ORIGINAL_STRATEGY_ANNOTATION]) ?? ds.spec?.updateStrategy ?? { type: 'RollingUpdate' };
    const wantGate = original.type === 'OnDelete';
    const ours = annotations[GATE_ADDED_ANNOTATION] === 'true';
    const others = gates.filter((g) => g.conditionType !== PEER_PODS_READY);
    // Only a gate rollplane added is removed, and only together with an image change (see above).
    const dropLeftover = !wantGate && gated && ours && image !== undefined && image !== templateImage(ds);
    const readinessGates = wantGate && !gated ? [...gates, { conditionType: PEER_PODS_READY }] : dropLeftover ? (others.length > 0 ? others : null) : undefined;
    const gateAdded = annotations[GATE_ADDED_ANNOTATION] === undefined ? String(wantGate && !gated) : dropLeftover ? null : undefined;
    const body = {
      metadata: {
        annotations: {
          ...(annotations[ORIGINAL_STRATEGY_ANNOTATION] === undefined ? { [ORIGINAL_STRATEGY_ANNOTATION]: JSON.stringify(original) } : {}),
          ...(gateAdded !== undefined ? { [GATE_ADDED_ANNOTATION]: gateAdded } : {}),
          [ROLLOUT_ANNOTATION]: rollout.id,
          [GATE_RUNTIME_CLASS_ANNOTATION]: strategy.peerRuntimeClass,
        },
      },
      spec: {
        updateStrategy: { type: 'OnDelete', rollingUpdate: null },
        template: {
          spec: {
            ...(image ? { containers: [{ name: container, image }] } : {}),
            ...(readinessGates !== undefined ? { readinessGates } : {}),
          },
        },
      },
    };
    return patchDaemonSet(this.deps.clients, ds, body);
  }

  async admit(target: AdmittedTarget, rollout: Rollout, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    const { namespace, name } = nodeAgentSelectorOf(rollout);
    const { mode } = nodeAgentStrategyOf(rollout);
    // The cache is enough to see that the DaemonSet is already under this rollout (the common case); a stale or
    // missing view only costs a read and an idempotent patch.
    const underRollout = (d: V1DaemonSet | undefined) =>
      d !== undefined &&
      templateImage(d) === target.toVersion &&
      d.spec?.updateStrategy?.type === 'OnDelete' &&
      d.metadata?.annotations?.[ROLLOUT_ANNOTATION] === rollout.id;
    let ds = this.deps.cache.daemonSet(namespace, name);
    const changedBehind = ds && changedOutside(ds, rollout);
    if (changedBehind) throw new ValidationError('daemonSet', changedBehind);
    if (!underRollout(ds)) {
      ds = await readDaemonSet(this.deps.clients, namespace, name);
      // A rollback (or a resumed rollout after someone edited the template) may need the template set again.
      if (!underRollout(ds)) ds = await this.takeOver(ds, rollout, target.toVersion);
    }
    if (!ds) throw new NotFoundError(`DaemonSet ${namespace}/${name} not found`);
    const container = agentContainerName(ds);
    const pods = this.deps.cache.agentPodsOn(ds, target.name);
    // Durable before the old agent goes: the replacement is this rollout's and recorded once, across a restart too. A
    // second admission (retried after a crash) keeps what the first one saw.
    if (this.deps.replacements.rolloutOf(target.namespace, target.name) !== rollout.id) {
      const before = pods.find((p) => podImage(p, container) !== target.toVersion);
      await this.deps.replacements.intend(target.namespace, target.name, {
        rolloutId: rollout.id,
        oldPod: before?.metadata?.name ?? null,
        oldImage: before ? (podImage(before, container) ?? null) : null,
      });
    }
    if (pods.some((p) => podImage(p, container) === target.toVersion)) return; // replaced already (or in progress)
    const old = pods[0];
    if (!old) return; // nothing runs there: the DaemonSet starts the new agent by itself
    signal.throwIfAborted();
    if (mode === 'SURGE' && isReady(old)) await retirePod(this.deps.clients, old, ds);
    else await deletePod(this.deps.clients, old);
  }

  async observe(target: AdmittedTarget, rollout: Rollout): Promise<TargetObservation> {
    const { namespace, name } = nodeAgentSelectorOf(rollout);
    const { minReadySeconds } = nodeAgentStrategyOf(rollout);
    const ds = this.deps.cache.daemonSet(namespace, name);
    if (!ds) return { phase: 'failed', reason: `DaemonSet ${namespace}/${name} not found` };
    const changedBehind = changedOutside(ds, rollout);
    if (changedBehind) return { phase: 'failed', reason: changedBehind };
    const node = target.name;
    const container = agentContainerName(ds);
    const pods = this.deps.cache.agentPodsOn(ds, node);
    const fresh = pods.find((p) => podImage(p, container) === target.toVersion);
    if (!fresh) {
      // The node left the cluster (scaled down, replaced): no agent is needed there any more.
      if (pods.length === 0 && !this.deps.cache.node(node)) {
        if (this.deps.replacements.rolloutOf(target.namespace, node) === rollout.id) await this.deps.replacements.drop(target.namespace, node);
        return { phase: 'succeeded' };
      }
      return { phase: 'progressing', message: pods.length > 0 ? 'old agent still running' : 'waiting for the DaemonSet to start the new agent' };
    }
    const failure = startFailure(fresh);
    if (failure) return { phase: 'failed', reason: `new agent ${fresh.metadata?.name} on ${node}: ${failure}` };
    const gate = peerGate(fresh, this.deps.cache.podsOn(node), this.deps.cache.peerRuntimeClass(ds));
    const gateOpen = hasGate(fresh) ? gateSatisfied(fresh) : gate.open;
    if (!gateOpen) {
      return {
        phase: 'progressing',
        message:
          gate.waiting.length > 0
            ? `waiting for peer pods (${gate.back}/${gate.peers} back): ${gate.waiting.slice(0, 5).join(', ')}`
            : 'waiting for the new agent',
      };
    }
    const wait = availableInMs(fresh, minReadySeconds, this.now());
    if (wait === undefined) return { phase: 'progressing', message: 'new agent not Ready yet' };
    if (wait > 0) {
      this.nudgeLater(node, wait);
      return { phase: 'progressing', message: `new agent Ready; minReadySeconds ${minReadySeconds}` };
    }
    const leftovers = pods.filter((p) => p !== fresh).length + this.deps.cache.retiringOn(ds, node).length;
    if (leftovers > 0) return { phase: 'progressing', message: 'old agent being removed' };
    await this.report(target, rollout, ds, fresh, gate.back);
    return { phase: 'succeeded' };
  }

  /**
   * Nodes whose agent is down although this rollout is not changing it (a crashed node, an agent still starting after
   * its node came back, a node that joined after planning) count against the one-node budget, so the rollout never
   * takes a second node's agent away. Not counted: nodes whose agent runs the rollout's image (its own node, in
   * progress or failed), and target nodes whose agent cannot start (bad image, crash loop) on a Ready node — replacing
   * it is what the rollout (typically a rollback) is for.
   */
  async unavailableOutsideRollout(rollout: Rollout, inRollout: ReadonlySet<string>): Promise<number> {
    const { namespace, name } = nodeAgentSelectorOf(rollout);
    const ds = this.deps.cache.daemonSet(namespace, name);
    if (!ds) return 0;
    const container = agentContainerName(ds);
    const nodes = new Set<string>();
    for (const pod of this.deps.cache.agentPods(ds)) if (pod.spec?.nodeName && isActive(pod)) nodes.add(pod.spec.nodeName);
    let down = 0;
    for (const node of nodes) {
      const pods = this.deps.cache.agentPodsOn(ds, node);
      if ([...pods, ...this.deps.cache.retiringOn(ds, node)].some(isReady)) continue;
      if (pods.some((p) => podImage(p, container) === rollout.toVersion)) continue;
      const fixable = inRollout.has(node) && isNodeReady(this.deps.cache.node(node)) && pods.some((p) => startFailure(p) !== undefined);
      if (!fixable) down++;
    }
    return down;
  }

  async finish(rollout: Rollout, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    const { namespace, name } = nodeAgentSelectorOf(rollout);
    let ds: V1DaemonSet;
    try {
      ds = await readDaemonSet(this.deps.clients, namespace, name);
    } catch (error) {
      if (error instanceof NotFoundError) return;
      throw error;
    }
    const annotations = ds.metadata?.annotations ?? {};
    // A newer rollout took the set over (supersede): restoring is its job now.
    if (annotations[ROLLOUT_ANNOTATION] !== undefined && annotations[ROLLOUT_ANNOTATION] !== rollout.id) return;
    const saved = annotations[ORIGINAL_STRATEGY_ANNOTATION];
    const original = parseStrategy(saved);
    const removeGate = annotations[GATE_ADDED_ANNOTATION] === 'true';
    const clear = { [ROLLOUT_ANNOTATION]: null, [GATE_RUNTIME_CLASS_ANNOTATION]: null };
    if (annotations[ROLLOUT_ANNOTATION] === rollout.id && changedOutside(ds, rollout)) {
      // Someone else (a `helm upgrade` of the chart) put a strategy back while this rollout drove the set: the
      // DaemonSet is theirs again. Nothing to restore; a gate rollplane added stays recorded until a rollout removes it.
      await patchDaemonSet(this.deps.clients, ds, {
        metadata: { annotations: { ...clear, [ORIGINAL_STRATEGY_ANNOTATION]: null, ...(templateGated(ds) ? {} : { [GATE_ADDED_ANNOTATION]: null }) } },
      });
      return;
    }

    if (!original || original.type === 'OnDelete') {
      // Under OnDelete a template change replaces nothing: the gate can go (running pods keep their condition).
      const gates = (ds.spec?.template?.spec?.readinessGates ?? []).filter((g) => g.conditionType !== PEER_PODS_READY);
      await patchDaemonSet(this.deps.clients, ds, {
        metadata: { annotations: { ...clear, [ORIGINAL_STRATEGY_ANNOTATION]: null, [GATE_ADDED_ANNOTATION]: null } },
        spec: {
          ...(original ? { updateStrategy: { type: 'OnDelete', rollingUpdate: null } } : {}),
          ...(removeGate ? { template: { spec: { readinessGates: gates.length > 0 ? gates : null } } } : {}),
        },
      });
      return;
    }
    if (this.allUpdated(ds)) {
      // RollingUpdate again, over a template that differs from the user's only by the image (takeOver added no gate),
      // so every agent is already "updated" and the DaemonSet replaces none.
      await patchDaemonSet(this.deps.clients, ds, {
        // A leftover gate an earlier rollplane added (not removable without replacing every agent) stays recorded.
        metadata: { annotations: { ...clear, [ORIGINAL_STRATEGY_ANNOTATION]: null, ...(templateGated(ds) ? {} : { [GATE_ADDED_ANNOTATION]: null }) } },
        spec: { updateStrategy: { ...original, rollingUpdate: original.rollingUpdate ?? null } },
      });
      return;
    }
    // Mixed versions (aborted, failed): RollingUpdate would let the DaemonSet replace the rest on its own, in its own
    // order. Stay OnDelete; the saved strategy is restored by the next rollout of this set that ends uniform.
    this.deps.logger?.warn({ daemonSet: `${namespace}/${name}`, rolloutId: rollout.id }, 'node agents run mixed versions; DaemonSet stays OnDelete');
    await patchDaemonSet(this.deps.clients, ds, { metadata: { annotations: clear } });
  }

  /** Every eligible node runs a pod of the current template, so RollingUpdate would replace nothing. */
  private allUpdated(ds: V1DaemonSet): boolean {
    const s = ds.status;
    if (!s || (s.observedGeneration ?? 0) < (ds.metadata?.generation ?? 0)) return false;
    const image = templateImage(ds);
    const container = agentContainerName(ds);
    const pods = this.deps.cache.agentPods(ds).filter((p) => !p.metadata?.deletionTimestamp);
    return (s.updatedNumberScheduled ?? 0) === s.desiredNumberScheduled && pods.every((p) => podImage(p, container) === image);
  }

  /** NodeAgentReplaced, once: the admission's intent names the rollout and the old agent, and goes with the event. */
  private async report(target: AdmittedTarget, rollout: Rollout, ds: V1DaemonSet, fresh: V1Pod, peersBack: number): Promise<void> {
    const seconds = Math.max(0, (this.now() - target.admittedAt.getTime()) / 1000);
    const daemonSet = `${ds.metadata?.namespace}/${ds.metadata?.name}`;
    const recorded = await this.deps.replacements.record(target.namespace, target.name, (replaced) =>
      replaced.rolloutId !== rollout.id
        ? undefined
        : {
            type: EventType.NodeAgentReplaced,
            payload: {
              node: target.name,
              daemonSet,
              oldPod: replaced.oldPod,
              newPod: fresh.metadata?.name ?? null,
              oldImage: replaced.oldImage ?? target.fromVersion,
              newImage: target.toVersion,
              peerPodsRestarted: peersBack,
              seconds,
            },
          },
    );
    if (recorded) this.deps.metrics.replaced(daemonSet, seconds);
  }

  /** Re-evaluate the node once minReadySeconds have passed (nothing in the cluster changes at that moment). */
  private nudgeLater(node: string, ms: number): void {
    if (this.timers.has(node)) return;
    const timer = setTimeout(() => {
      this.timers.delete(node);
      this.deps.notify({ name: node });
    }, ms + 5);
    timer.unref();
    this.timers.set(node, timer);
  }

  stop(): void {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }
}

/**
 * While a rollout drives a set its strategy is OnDelete (`takeOver`). Any other strategy on a set this rollout took
 * over was put there by someone else — typically a `helm upgrade` of the cloud-api-adaptor chart, whose three-way
 * merge sets the chart's RollingUpdate and image again. rollplane then stops instead of switching it back: the
 * DaemonSet controller is already replacing agents with the chart's image, and two writers of one template would
 * replace agents twice.
 */
function changedOutside(ds: V1DaemonSet, rollout: Rollout): string | undefined {
  if (ds.metadata?.annotations?.[ROLLOUT_ANNOTATION] !== rollout.id) return undefined;
  const type = ds.spec?.updateStrategy?.type ?? 'RollingUpdate';
  if (type === 'OnDelete') return undefined;
  return (
    `DaemonSet ${ds.metadata?.namespace}/${ds.metadata?.name} was switched to ${type} (image ${templateImage(ds) ?? '?'}) outside rollplane while this ` +
    'rollout drove it (a helm upgrade of its chart?); rollplane stops rather than fight the DaemonSet controller'
  );
}

function templateGated(ds: V1DaemonSet): boolean {
  return (ds.spec?.template?.spec?.readinessGates ?? []).some((g) => g.conditionType === PEER_PODS_READY);
}

function isImage(text: string): boolean {
  try {
    parseImageReference(text);
    return true;
  } catch {
    return false;
  }
}

function parseStrategy(text: string | undefined): V1DaemonSetUpdateStrategy | undefined {
  if (!text) return undefined;
  try {
    const value = JSON.parse(text) as V1DaemonSetUpdateStrategy;
    return typeof value === 'object' && value !== null ? value : undefined;
  } catch {
    return undefined;
  }
}
