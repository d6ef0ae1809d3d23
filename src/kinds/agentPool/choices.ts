/**
 * What rollplane chose for each agent pool, from the history (issue 27, ADR 0032): a pool's desired agent image is
 * the outcome of the last rollout that decided it, not whatever the vm-dhcp-controller's `--image` says now. So a
 * `helm upgrade` or an add-on upgrade that reverts a rollout shows as drift, and a failed rollout's image is never
 * presented as desired. And what upstream would do to a pool: `recreatedWith` (the cluster's answer), `exposedTo` when
 * that is an image nobody chose for the pool.
 */
import type { AgentPoolQueries, AgentPoolView } from './plan.js';
import type { EventLog } from '../../domain/EventLog.js';
import { EventType, type StoredEvent } from '../../domain/events.js';
import { LOCAL_CLUSTER } from '../../domain/clusters/model.js';
import type { Rollout, RolloutService, RolloutTarget } from '../../domain/RolloutService.js';
import { isTerminal } from '../../domain/rolloutStates.js';
import { clusterOf } from '../../domain/ports.js';

/** A pool's key among every cluster's decisions: the same `namespace/name` may be in several member clusters. */
function choiceKey(cluster: string, namespace: string, name: string): string {
  return `${cluster}|${namespace}/${name}`;
}

/** The decision of one rollout about one pool. */
export interface AgentPoolChoice {
  image: string;
  rolloutId: string;
}

/** How many of the newest agent-pool rollouts are read to find each pool's last decision. */
const ROLLOUTS_READ = 200;
/** How many of the newest recorded changes of the vm-dhcp-controllers are read to find where each cluster's began. */
const CHANGES_READ = 1_000;

/**
 * When each cluster's name began to name the cluster it names now: the first change of its vm-dhcp-controller recorded
 * through its current API server, after one recorded through another (ADR 0074's `endpoint`: a name registered again
 * at another cluster). Decisions of rollouts created before that were made about another cluster's pools (attack 20,
 * F7: every pool of the new cluster showed as drifted, desired by a rollout that never ran there). A cluster whose
 * recorded changes all came through one server (or carry no endpoint) has no such start.
 */
export function clusterEpochs(changes: readonly Pick<StoredEvent, 'cluster' | 'payload' | 'createdAt'>[]): Map<string, Date> {
  const epochs = new Map<string, Date>();
  const current = new Map<string, { endpoint: string; since: Date; done: boolean }>();
  for (const change of changes) {
    const cluster = change.cluster ?? LOCAL_CLUSTER;
    const endpoint = typeof change.payload.endpoint === 'string' ? change.payload.endpoint : undefined;
    const seen = current.get(cluster);
    if (seen?.done) continue;
    if (endpoint === undefined) {
      // Recorded before changes named their server: nothing older can be told apart.
      if (seen) seen.done = true;
      else current.set(cluster, { endpoint: '', since: change.createdAt, done: true });
      continue;
    }
    if (!seen) current.set(cluster, { endpoint, since: change.createdAt, done: false });
    else if (seen.endpoint === endpoint) seen.since = change.createdAt;
    else {
      seen.done = true;
      epochs.set(cluster, seen.since);
    }
  }
  return epochs;
}

/**
 * The image a rollout decided for one of its targets, or undefined when it decided nothing for it:
 * - active: the image it is moving the pool to (PENDING, PROGRESSING and SUCCEEDED targets); a FAILED target keeps
 *   what it ran;
 * - FAILED: what the pool ran before, for every target it admitted (a failed rollout's image is never desired);
 * - SUCCEEDED, ABORTED, ROLLED_BACK: the new image where the target succeeded (or is still finishing), what it ran
 *   before where it failed;
 * - an ended rollout decided nothing for a target it never admitted (cancelled): the decision before it stands;
 * - a target skipped as already on the image was decided too (the rollout chose that image); other skips (held,
 *   paused) decided nothing.
 */
export function decisionOf(
  rollout: Pick<Rollout, 'state'>,
  target: Pick<RolloutTarget, 'state' | 'fromVersion' | 'toVersion' | 'skipReason'>,
): string | undefined {
  const back = target.fromVersion ?? undefined;
  const admitted = target.state === 'SUCCEEDED' || target.state === 'FAILED' || target.state === 'PROGRESSING';
  if (target.state === 'SKIPPED') return target.skipReason === 'already current' && rollout.state !== 'FAILED' ? target.toVersion : undefined;
  if (rollout.state === 'FAILED') return admitted ? back : undefined;
  if (target.state === 'FAILED') return back;
  if (isTerminal(rollout.state) && !admitted) return undefined;
  return target.toVersion;
}

type ChoicesState = { eventId: number; choices: Map<string, AgentPoolChoice>; failedImages: Set<string> };

/**
 * The last decision for each pool (its cluster and `namespace/name`), read from the newest agent-pool rollouts and kept until the
 * history of agent-pool rollouts changes (one indexed read of the newest such event per call). One per history
 * (`sharedAgentPoolChoices`), for every cluster: it holds every cluster's decisions anyway, and callers that ask at
 * once share one reading.
 */
export class AgentPoolChoices {
  private cached: ChoicesState | undefined;
  private reading: { eventId: number; state: Promise<ChoicesState> } | undefined;

  constructor(
    private readonly rollouts: Pick<RolloutService, 'list' | 'allTargets'>,
    private readonly events: Pick<EventLog, 'listBefore'>,
  ) {}

  /** Pool key → its last decision; and the images of failed rollouts (never desired). */
  async current(): Promise<ChoicesState> {
    const types = [EventType.RolloutStateChanged, EventType.TargetStateChanged, EventType.UpstreamControllerChanged];
    const [newest] = await this.events.listBefore({ kind: 'AGENT_POOL', types }, undefined, 1);
    const eventId = newest?.id ?? 0;
    if (this.cached?.eventId === eventId) return this.cached;
    // A bump over 1,000 clusters plans each at once: each asked here, and each read every target of the newest
    // rollouts again (issue 29's bench: 27 s of its bump, and one copy of every decision per cluster held in memory).
    if (this.reading?.eventId === eventId) return this.reading.state;
    const state = this.read(eventId);
    this.reading = { eventId, state };
    try {
      return await state;
    } finally {
      if (this.reading?.state === state) this.reading = undefined;
    }
  }

  private async read(eventId: number): Promise<ChoicesState> {
    const epochs = clusterEpochs(await this.events.listBefore({ kind: 'AGENT_POOL', types: [EventType.UpstreamControllerChanged] }, undefined, CHANGES_READ));
    const choices = new Map<string, AgentPoolChoice>();
    const failedImages = new Set<string>();
    let after: string | undefined;
    let read = 0;
    while (read < ROLLOUTS_READ) {
      const page = await this.rollouts.list({ kind: 'AGENT_POOL' }, 50, after);
      for (const rollout of page.items) {
        read++;
        if (rollout.state === 'FAILED' && rollout.toVersion !== null) failedImages.add(rollout.toVersion);
        for (const target of await this.rollouts.allTargets(rollout.id)) {
          const cluster = clusterOf(target);
          const key = choiceKey(cluster, target.namespace, target.name);
          if (choices.has(key)) continue;
          const epoch = epochs.get(cluster);
          if (epoch && rollout.createdAt.getTime() < epoch.getTime()) continue; // about the cluster the name named before
          const image = decisionOf(rollout, target);
          if (image !== undefined) choices.set(key, { image, rolloutId: rollout.id });
        }
      }
      if (!page.hasNextPage || !page.endCursor) break;
      after = page.endCursor;
    }
    this.cached = { eventId, choices, failedImages };
    return this.cached;
  }
}

const choicesOfHistory = new WeakMap<object, AgentPoolChoices>();

/** The one AgentPoolChoices of a history, which every cluster's agent-pool queries share. */
export function sharedAgentPoolChoices(rollouts: Pick<RolloutService, 'list' | 'allTargets'>, events: Pick<EventLog, 'listBefore'>): AgentPoolChoices {
  let choices = choicesOfHistory.get(rollouts);
  if (!choices) {
    choices = new AgentPoolChoices(rollouts, events);
    choicesOfHistory.set(rollouts, choices);
  }
  return choices;
}

/**
 * The agent-pool queries with the history's decisions applied: `desiredImage` is the pool's last decision, else what
 * the cluster asks for (the controller's `--image` beside it, unless that is a failed rollout's image: then what the
 * pool runs); `desiredBy` names the deciding rollout; `exposedTo` is the image a recreated agent would get when that is
 * neither what the pool runs nor what a rollout decided for it.
 */
export function agentPoolsWithHistory(queries: AgentPoolQueries, choices: AgentPoolChoices, cluster: string): AgentPoolQueries {
  const apply = (view: AgentPoolView, state: Awaited<ReturnType<AgentPoolChoices['current']>>): AgentPoolView => {
    // This runtime's cluster's decisions only (attack 16, G3: a bump of edge-2 made local's pool of the same name drift).
    const choice = state.choices.get(choiceKey(cluster, view.namespace, view.name));
    const fallback = view.desiredImage !== null && state.failedImages.has(view.desiredImage) && view.mode === 'COEXIST' ? view.runningImage : view.desiredImage;
    const desiredImage = view.paused ? view.desiredImage : (choice?.image ?? fallback);
    // Exposed: a recreated agent would run an image the pool does not run and no rollout decided for it (a pool no
    // rollout ever decided is exposed to any image but its own, though it desires the controller's: drift shows both).
    const exposedTo =
      view.recreatedWith !== null && view.recreatedWith !== view.runningImage && view.recreatedWith !== choice?.image && !view.paused
        ? view.recreatedWith
        : null;
    if (desiredImage === view.desiredImage && exposedTo === view.exposedTo && (choice?.rolloutId ?? null) === view.desiredBy) return view;
    return { ...view, desiredImage, desiredBy: choice?.rolloutId ?? null, exposedTo };
  };
  return {
    async all() {
      const [views, state] = await Promise.all([queries.all(), choices.current()]);
      return views.map((view) => apply(view, state));
    },
    async get(namespace, name) {
      const view = await queries.get(namespace, name);
      return view ? apply(view, await choices.current()) : undefined;
    },
    checkRollout: () => queries.checkRollout(),
    ...(queries.admitImage ? { admitImage: (image: string) => queries.admitImage!(image) } : {}),
    ...(queries.preflight ? { preflight: (image: string, targets: readonly { namespace: string; name: string }[]) => queries.preflight!(image, targets) } : {}),
  };
}
