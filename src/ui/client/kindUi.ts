/**
 * A rollout kind's part of the web UI (ADR 0052): an interface the shared UI owns and each kind's `ui/` folder
 * (src/kinds/<kind>/ui) satisfies, so that the shared views name no kind. The list of kinds (src/kinds/ui.ts) reaches
 * the views through KindsContext and the live store through its constructor, both given by the entry point
 * (src/webUi.ts), as the CLI gets its bump subcommands (ADR 0045).
 */
import { type ComponentType, createContext, useContext } from 'react';
import type { EventType, RolloutKind } from './generated/graphql.js';
import type { LiveStream } from './liveStream.js';

export interface KindUi {
  kind: RolloutKind;
  /** How the views name the kind (kind filters, the rollouts' Kind column): `Agent pools`. */
  label: string;
  /** What one of its targets is called, in search hints: `pool`. */
  target: string;
  /** The event types its rollouts and controllers record, offered after the shared ones by History's type filter. */
  eventTypes: readonly EventType[];
  /** Its sections of the Fleet page. */
  Fleet: ComponentType;
  /** Its live subscriptions: rows of the dashboard's feed, and the series its charts draw. */
  live: readonly LiveStream[];
  /** Its sections of the Charts page, if it has any. */
  Charts?: ComponentType;
}

export const KindsContext = createContext<readonly KindUi[]>([]);

/** The registered kinds' UI parts, in the order the views list them. */
export function useKinds(): readonly KindUi[] {
  return useContext(KindsContext);
}

/** `a`, `a and b`, `a, b and c` (or with `or`). */
export function listed(items: readonly string[], conjunction = 'and'): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} ${conjunction} ${items[items.length - 1]}`;
}

/** The kind's label, or the enum value for a kind the page does not know (a newer server). */
export function kindLabel(kinds: readonly KindUi[], kind: string): string {
  return kinds.find((k) => k.kind === kind)?.label ?? kind;
}
