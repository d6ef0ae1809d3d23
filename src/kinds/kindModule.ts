import type { KindPorts } from '../domain/Domain.js';
import type { EventDefinition } from '../domain/eventPayloads.js';
import type { RolloutKind } from '../domain/events.js';
import type { KindContract } from '../domain/kinds/index.js';
import type { RolloutDriver } from '../domain/ports.js';
import type { ControllerHost } from '../controllers/host.js';
import type { KindApi } from '../graphql/kindApi.js';
import type { Resolvers } from '../graphql/generated/resolvers.js';

/** Domain query ports the rollout kinds provide (each kind's field of KindPorts). */
export type KindQueries = Partial<KindPorts>;

/** What a kind's setup hands back: the driver the engine calls (with its rollback rules) and the API's query port. */
export interface KindRuntime {
  driver: RolloutDriver;
  queries: KindQueries;
}

/**
 * A rollout kind, registered as one object (ADR 0041): its contract (strategy and selector schemas), its event types
 * (ADR 0051), its part of the API (`KindApi`: its resolvers with its subscriptions, its `drift` port, its cached root
 * fields, ADRs 0045, 0051), and `setup`,
 * which builds its informers and controllers on the host (through the shared KindHost: informers, notifications,
 * history) and returns its driver and query port. The kind's folder holds everything else it needs; the list of
 * registered kinds (./index.ts) is the one place outside it that names it.
 */
export interface RolloutKindModule<K extends RolloutKind = RolloutKind> extends KindApi {
  readonly kind: K;
  readonly contract: KindContract<K>;
  /** Its own event types (its `events.ts`): payload schemas and notification names (ADR 0051). */
  readonly events: readonly EventDefinition[];
  /** Its part of the API: root fields and types of schema.graphql it answers (its `graphql.ts`). */
  readonly resolvers: Resolvers;
  setup(host: ControllerHost): KindRuntime;
}

/** Any registered kind's module. */
export type AnyKindModule = { [K in RolloutKind]: RolloutKindModule<K> }[RolloutKind];
