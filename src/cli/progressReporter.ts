import type { RolloutView } from './operations.js';
import type { TargetChange } from './targetTracker.js';

export interface ProgressReporter {
  update(rollout: RolloutView): void;
  /** Per-target news: what changed since the last call, what is in flight now, and the failures so far. */
  targets(changes: readonly TargetChange[], inFlight: readonly string[], failures: readonly TargetChange[]): void;
  /** A connection notice (dropped, reconnecting, polling). */
  notice(message: string): void;
  /** Ends the display (the bar's line is finished). */
  done(): void;
}

export interface ReporterStream {
  write(chunk: string): unknown;
}

const BAR_WIDTH = 24;
/** Target rows under the bar on a terminal; the rest are counted. */
const MAX_TARGET_ROWS = 8;

const COLOURS: Record<string, number> = { SUCCEEDED: 32, FAILED: 31, ABORTED: 31, ROLLED_BACK: 33, PROGRESSING: 33, PAUSED: 35, CANCELLED: 2 };

/** Colours a state word (only where the caller allows colours: a terminal, without NO_COLOR). */
export function paint(state: string, colour: boolean): string {
  const code = COLOURS[state];
  return colour && code ? `\x1b[${code}m${state}\x1b[0m` : state;
}

/** Whether colours may be used: on a terminal, unless NO_COLOR is set or the terminal is dumb (no-color.org). */
export function coloursAllowed(isTTY: boolean, env: Readonly<Record<string, string | undefined>>): boolean {
  return isTTY && !env.NO_COLOR && env.TERM !== 'dumb';
}

/** `4/10 succeeded, 0 failed, 1 in progress, 2 skipped`: the counts that are not zero, plus succeeded and failed. */
export function describeProgress(rollout: RolloutView): string {
  const p = rollout.progress;
  const parts = [`${p.succeeded}/${p.total} succeeded`, `${p.failed} failed`];
  if (p.progressing) parts.push(`${p.progressing} in progress`);
  if (p.skipped) parts.push(`${p.skipped} skipped`);
  if (p.cancelled) parts.push(`${p.cancelled} cancelled`);
  return parts.join(', ');
}

function signature(rollout: RolloutView): string {
  const p = rollout.progress;
  return [rollout.state, p.total, p.pending, p.progressing, p.succeeded, p.failed, p.skipped, p.cancelled, rollout.message ?? ''].join('|');
}

/**
 * On a terminal: a compact block redrawn in place — the progress bar, then the targets in flight and the failures —
 * with coloured states when `colour` allows. Otherwise (CI logs): one plain, timestamped line per visible change of
 * the rollout and per target change. Both go to stderr so that stdout keeps only the command's result.
 */
export function createProgressReporter(
  stream: ReporterStream,
  isTTY: boolean,
  now: () => Date = () => new Date(),
  /** Terminal width: a redrawn line must not wrap, or the cursor no longer returns to the block's start. */
  columns: () => number | undefined = () => undefined,
  colour = false,
): ProgressReporter {
  let last = '';
  if (isTTY) {
    let summary: { text: string; state: string } | undefined;
    let rows: { target: string; state: string; detail: string }[] = [];
    let more = 0;
    let drawnLines = 0;
    let drawn = '';
    const fit = (plain: string, coloured: string) => {
      const width = columns();
      return width && width > 10 && plain.length >= width ? `${plain.slice(0, width - 2)}…` : coloured;
    };
    const render = () => {
      if (!summary) return '';
      const lines = [fit(summary.text, summary.text.replace(summary.state, paint(summary.state, colour)))];
      for (const row of rows) {
        const plain = `  ${row.target}  ${row.state}${row.detail ? `  ${row.detail}` : ''}`;
        lines.push(fit(plain, `  ${row.target}  ${paint(row.state, colour)}${row.detail ? `  ${row.detail}` : ''}`));
      }
      if (more > 0) lines.push(`  … ${more} more in progress`);
      return lines.join('\n');
    };
    const draw = () => {
      const block = render();
      const up = drawnLines > 1 ? `\x1b[${drawnLines - 1}A` : '';
      stream.write(`${up}\r\x1b[2K${drawnLines > 1 ? '\x1b[J' : ''}${block}`);
      drawn = block;
      drawnLines = block ? block.split('\n').length : 0;
    };
    return {
      update(rollout) {
        const p = rollout.progress;
        const filled = Math.round((Math.min(100, Math.max(0, p.percent)) / 100) * BAR_WIDTH);
        const bar = `${'█'.repeat(filled)}${'░'.repeat(BAR_WIDTH - filled)}`;
        summary = {
          text: `${rollout.id} ${rollout.state.padEnd(11)} [${bar}] ${p.percent.toFixed(0).padStart(3)}%  ${describeProgress(rollout)}`,
          state: rollout.state,
        };
        draw();
      },
      targets(_changes, inFlight, failures) {
        const shownFailures = failures.slice(-3);
        const room = Math.max(0, MAX_TARGET_ROWS - shownFailures.length);
        rows = [
          ...inFlight.slice(0, room).map((target) => ({ target, state: 'PROGRESSING', detail: '' })),
          ...shownFailures.map((f) => ({ target: f.target, state: 'FAILED', detail: f.error ?? '' })),
        ];
        more = Math.max(0, inFlight.length - room);
        if (summary) draw();
      },
      notice(message) {
        const up = drawnLines > 1 ? `\x1b[${drawnLines - 1}A` : '';
        stream.write(`${up}\r\x1b[2K${drawnLines > 1 ? '\x1b[J' : ''}${message}\n`);
        drawnLines = 0;
        if (drawn) draw();
      },
      done() {
        if (drawn) stream.write('\n');
        drawn = '';
        drawnLines = 0;
      },
    };
  }
  return {
    update(rollout) {
      const sig = signature(rollout);
      if (sig === last) return;
      last = sig;
      const message = rollout.message && rollout.state !== 'PROGRESSING' ? ` — ${rollout.message}` : '';
      stream.write(
        `${now().toISOString()} rollout ${rollout.id} ${rollout.state} ${rollout.progress.percent.toFixed(0)}% (${describeProgress(rollout)})${message}\n`,
      );
    },
    targets(changes) {
      for (const change of changes) stream.write(`${now().toISOString()}   ${change.target} ${change.state}${change.error ? `: ${change.error}` : ''}\n`);
    },
    notice(message) {
      stream.write(`${now().toISOString()} ${message}\n`);
    },
    done() {},
  };
}
