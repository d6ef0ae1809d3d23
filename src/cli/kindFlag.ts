import { ROLLOUT_KINDS, type RolloutKind } from '../domain/events.js';
import * as flags from './flags.js';

/**
 * The `--kind <kind>` flag of `history` and `drift`: one rollout kind, spelled as the API's enum value in lower case
 * with dashes (`agent-pool`, underscores accepted), in the enum's order. From the domain's list of the enum's values,
 * so the CLI's commands name no kind.
 */
const KIND_FLAGS: readonly string[] = ROLLOUT_KINDS.map((kind) => kind.toLowerCase().replace(/_/g, '-'));

export const KIND_FLAG_HELP = `only this kind: ${KIND_FLAGS.join(', ')}`;

/** Parses the flag to the enum's spelling (upper case, underscores); commander keeps it as the option's value. */
export function parseKindFlag(raw: string): string {
  return flags.oneOf(KIND_FLAGS, (value) => value.replace(/-/g, '_').toUpperCase())(raw.replace(/_/g, '-'));
}

/** The kind a parsed `--kind` names (none when the flag was not given). */
export function kindOfFlag(value: string | undefined): RolloutKind | undefined {
  return ROLLOUT_KINDS.find((kind) => kind === value);
}
