import { readPayload } from '../../../domain/eventPayloads.js';
import { nodeAgentReplaced } from '../events.js';
import type { V1DaemonSet, V1Node, V1Pod } from '@kubernetes/client-node';
import type { Request } from '../../../controller/Controller.js';
import { EventType } from '../../../domain/events.js';
import type { KindEvents } from '../../../controllers/kindHost.js';
import { PEER_RUNTIME_CLASS_ANNOTATION, ROLLOUT_ANNOTATION } from './names.js';
import type { NodeAgentCache } from './NodeAgentCache.js';
import { agentContainerName, isActive, isReady, podImage, templateImage } from './podFacts.js';

type Events = Pick<KindEvents, 'append' | 'listBefore'>;
type Logger = { warn(obj: object, msg: string): void };

export interface ExternalChangeRecorderDeps {
  cache: NodeAgentCache;
  events: Events;
  logger?: Logger;
}

/**
 * Records what happens to a managed node-agent DaemonSet outside rollplane (docs/adr/0019, "unplanned changes"): a
 * `helm upgrade` of the cloud-api-adaptor chart changes the template image, and under the chart's RollingUpdate the
 * DaemonSet controller replaces every agent by itself. Each template image change rollplane did not make is an
 * UpstreamControllerChanged event (`planned: false`); each agent that comes up Ready with another image than the one
 * its node ran before, outside a rollout, is a NodeAgentReplaced event with `planned: false`, `reason: unplanned` and
 * no rollout id. Runs on the leader only (one key per DaemonSet, one worker).
 *
 * A set is planned work while a rollout drives it (its annotation, and OnDelete — any other strategy under the
 * annotation was put back by someone else, see `changedOutside` in the driver); its replacements are the rollout's and
 * recorded by the driver. Exactly once across a restart, as the driver does it: the history says which agent a node's
 * last NodeAgentReplaced event brought up, and an agent already named there is never recorded again.
 */
export class ExternalChangeRecorder {
  /** `namespace/name` → the template image last seen. Unknown after a start: the first one seen is the baseline. */
  private readonly images = new Map<string, string>();
  /** `namespace/name` → the change made outside rollplane the set is under (until a rollout drives it again). */
  private readonly changes = new Map<string, { from: string; to: string; at: Date }>();
  /** `namespace/name/node` → the agent last seen Ready there (name and image). */
  private readonly agents = new Map<string, { pod: string; image: string }>();

  private readonly cache: NodeAgentCache;
  private readonly events: Events;
  private readonly logger: Logger | undefined;

  constructor(deps: ExternalChangeRecorderDeps) {
    this.cache = deps.cache;
    this.events = deps.events;
    this.logger = deps.logger;
  }

  async reconcile(request: Request): Promise<void> {
    const ds = this.cache.daemonSet(request.namespace ?? '', request.name);
    if (!ds || !this.cache.isManaged(ds) || ds.metadata?.deletionTimestamp) return;
    const image = templateImage(ds);
    if (!image) return;
    const ref = `${ds.metadata!.namespace}/${ds.metadata!.name}`;
    const planned = drivenByRollout(ds);
    const previous = this.images.get(ref) ?? (planned ? image : await this.firstSight(ds, image));
    // Remembered only once recorded: a failed append is retried by the controller.
    if (planned) this.changes.delete(ref);
    else if (previous !== image) {
      await this.events.append({
        type: EventType.UpstreamControllerChanged,
        namespace: ds.metadata!.namespace!,
        name: ds.metadata!.name!,
        payload: { controller: ref, daemonSet: ref, oldImage: previous, newImage: image, planned: false },
      });
      this.changes.set(ref, { from: previous, to: image, at: new Date() });
      this.logger?.warn({ daemonSet: ref, oldImage: previous, newImage: image }, 'the node-agent DaemonSet image was changed outside rollplane');
    }
    this.images.set(ref, image);
    await this.recordReplacements(ds, ref, planned);
  }

  /**
   * The image the set ran before, when this process first sees it. A change the history already records (this process
   * restarted after recording it) is the baseline, and the change it records is the one in effect. Else, under
   * RollingUpdate without rollplane's annotations, Ready agents on another image than the template's mean the template
   * changed before rollplane looked (while it was down, or just before it started) and the DaemonSet is rolling: that
   * change is recorded now. Else the template is the baseline.
   */
  private async firstSight(ds: V1DaemonSet, image: string): Promise<string> {
    const ref = `${ds.metadata!.namespace}/${ds.metadata!.name}`;
    const [last] = await this.events.listBefore(
      { types: [EventType.UpstreamControllerChanged], namespace: ds.metadata!.namespace!, name: ds.metadata!.name! },
      undefined,
      1,
    );
    const lastChange = last && readPayload(EventType.UpstreamControllerChanged, last.payload);
    if (last && lastChange?.newImage === image) {
      if (typeof lastChange.oldImage === 'string') this.changes.set(ref, { from: lastChange.oldImage, to: image, at: last.createdAt });
      return image;
    }
    const annotated = Object.keys(ds.metadata?.annotations ?? {}).some((k) => k.startsWith('rollplane.io/') && k !== PEER_RUNTIME_CLASS_ANNOTATION);
    if ((ds.spec?.updateStrategy?.type ?? 'RollingUpdate') !== 'RollingUpdate' || annotated) return image;
    const container = agentContainerName(ds);
    const counts = new Map<string, number>();
    for (const pod of this.cache.agentPods(ds)) {
      const running = isActive(pod) && isReady(pod) ? podImage(pod, container) : undefined;
      if (running && running !== image) counts.set(running, (counts.get(running) ?? 0) + 1);
    }
    return [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? image;
  }

  private async recordReplacements(ds: V1DaemonSet, ref: string, planned: boolean): Promise<void> {
    const container = agentContainerName(ds);
    const nodes = new Set<string>();
    for (const pod of this.cache.agentPods(ds)) if (pod.spec?.nodeName) nodes.add(pod.spec.nodeName);
    for (const node of nodes) {
      const pods = this.cache.agentPodsOn(ds, node);
      // Only a settled node says what it runs: one agent, Ready (a surge in progress has two).
      const agent = pods.length === 1 && isReady(pods[0]!) ? pods[0]! : undefined;
      const image = agent ? podImage(agent, container) : undefined;
      if (!agent || !image) continue;
      const key = `${ref}/${node}`;
      const seen = this.agents.get(key);
      const current = { pod: agent.metadata!.name!, image };
      if (seen?.pod === current.pod) continue;
      // Under a rollout the driver records the replacement; a restart of the agent with its image is no replacement.
      if (!planned && !(seen && seen.image === image)) await this.recordIfNew(ds, ref, node, agent, image, seen, this.changes.get(ref));
      this.agents.set(key, current);
    }
  }

  /**
   * `before` is the agent the node ran as this process saw it; after a start, the node's last NodeAgentReplaced event
   * stands in for it. A node the history knows nothing of and this process has not seen before is the baseline.
   */
  private async recordIfNew(
    ds: V1DaemonSet,
    ref: string,
    node: string,
    agent: V1Pod,
    image: string,
    before: { pod: string; image: string } | undefined,
    change: { from: string; to: string; at: Date } | undefined,
  ): Promise<void> {
    // Node-agent events are about namespace "" and the node: the (kind, namespace, name) index answers this one.
    const [last] = await this.events.listBefore({ types: [EventType.NodeAgentReplaced], namespace: '', name: node }, undefined, 1);
    const lastReplaced = last ? readPayload(nodeAgentReplaced.type, last.payload) : {};
    const lastPod = lastReplaced.newPod;
    const lastImage = lastReplaced.newImage;
    if (lastPod === agent.metadata?.name) return; // recorded already (by a rollout, or before a restart)
    // A node first seen on the image of the change in effect, the history knowing nothing newer of it: that change
    // replaced its agent (before this process looked) — unless the node joined after the change.
    const joinedLater = change !== undefined && !before && last === undefined && joinedAfter(this.cache.node(node), change.at);
    const oldImage = before?.image ?? lastImage ?? (change && change.to === image && !joinedLater ? change.from : undefined);
    if (oldImage === undefined || oldImage === image) return;
    await this.events.append({
      type: EventType.NodeAgentReplaced,
      rolloutId: null,
      namespace: '',
      name: node,
      payload: {
        node,
        daemonSet: ref,
        oldPod: before?.pod ?? (typeof lastPod === 'string' ? lastPod : null),
        newPod: agent.metadata?.name ?? null,
        oldImage,
        newImage: image,
        planned: false,
        reason: 'unplanned',
        strategy: ds.spec?.updateStrategy?.type ?? 'RollingUpdate',
      },
    });
  }
}

/** The node joined the cluster after `at` (its agent is its first, not a replacement). */
function joinedAfter(node: V1Node | undefined, at: Date): boolean {
  const created = node?.metadata?.creationTimestamp;
  return created !== undefined && new Date(created).getTime() > at.getTime();
}

/** A rollout of rollplane drives the set: its annotation and the OnDelete strategy it sets (see the driver). */
function drivenByRollout(ds: V1DaemonSet): boolean {
  return ds.metadata?.annotations?.[ROLLOUT_ANNOTATION] !== undefined && ds.spec?.updateStrategy?.type === 'OnDelete';
}

/** What the recorder reads of a DaemonSet: its template (image), strategy and whether a rollout drives it. */
export function externalSignature(ds: V1DaemonSet): string {
  return JSON.stringify([
    ds.metadata?.labels,
    ds.metadata?.annotations?.[ROLLOUT_ANNOTATION],
    ds.spec?.updateStrategy?.type,
    ds.spec?.template?.spec?.containers?.map((c) => c.image),
  ]);
}
