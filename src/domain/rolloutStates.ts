/** Rollout and target lifecycles, and the only transitions allowed between their states. */
export type RolloutState = 'PENDING' | 'PROGRESSING' | 'PAUSED' | 'SUCCEEDED' | 'FAILED' | 'ABORTED' | 'ROLLED_BACK';
export type TargetState = 'PENDING' | 'PROGRESSING' | 'SUCCEEDED' | 'FAILED' | 'SKIPPED' | 'CANCELLED';

export const TERMINAL_ROLLOUT_STATES: readonly RolloutState[] = ['SUCCEEDED', 'FAILED', 'ABORTED', 'ROLLED_BACK'];
export const ACTIVE_ROLLOUT_STATES: readonly RolloutState[] = ['PENDING', 'PROGRESSING', 'PAUSED'];
export const FINISHED_TARGET_STATES: readonly TargetState[] = ['SUCCEEDED', 'FAILED', 'SKIPPED', 'CANCELLED'];

const ROLLOUT_TRANSITIONS: Record<RolloutState, readonly RolloutState[]> = {
  PENDING: ['PROGRESSING', 'PAUSED', 'SUCCEEDED', 'FAILED', 'ABORTED'],
  PROGRESSING: ['PAUSED', 'SUCCEEDED', 'FAILED', 'ABORTED'],
  PAUSED: ['PROGRESSING', 'FAILED', 'ABORTED'],
  SUCCEEDED: ['ROLLED_BACK'],
  FAILED: ['ROLLED_BACK'],
  ABORTED: ['ROLLED_BACK'],
  ROLLED_BACK: [],
};

export function canTransition(from: RolloutState, to: RolloutState): boolean {
  return ROLLOUT_TRANSITIONS[from].includes(to);
}

export function isTerminal(state: RolloutState): boolean {
  return TERMINAL_ROLLOUT_STATES.includes(state);
}
