import type { RolloutView } from './operations.js';

export interface ProgressReporter {
  update(rollout: RolloutView): void;
  /** A connection notice (dropped, reconnecting, polling). */
  notice(message: string): void;
  /** Ends the display (the bar's line is finished). */
  done(): void;
}

export interface ReporterStream {
  write(chunk: string): unknown;
}

const BAR_WIDTH = 24;

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
 * A progress bar redrawn in place on a terminal; otherwise one plain, timestamped line per visible change (CI logs).
 * Both go to stderr so that stdout keeps only the command's result.
 */
export function createProgressReporter(
  stream: ReporterStream,
  isTTY: boolean,
  now: () => Date = () => new Date(),
  /** Terminal width: a redrawn line must not wrap, or `\r` no longer returns to its start. */
  columns: () => number | undefined = () => undefined,
): ProgressReporter {
  let last = '';
  if (isTTY) {
    let drawn = '';
    const draw = (line: string) => {
      const width = columns();
      const fitted = width && width > 10 && line.length >= width ? `${line.slice(0, width - 2)}…` : line;
      stream.write(`\r\x1b[2K${fitted}`);
      drawn = fitted;
    };
    return {
      update(rollout) {
        const p = rollout.progress;
        const filled = Math.round((Math.min(100, Math.max(0, p.percent)) / 100) * BAR_WIDTH);
        const bar = `${'█'.repeat(filled)}${'░'.repeat(BAR_WIDTH - filled)}`;
        draw(`${rollout.id} ${rollout.state.padEnd(11)} [${bar}] ${p.percent.toFixed(0).padStart(3)}%  ${describeProgress(rollout)}`);
      },
      notice(message) {
        stream.write(`\r\x1b[2K${message}\n`);
        if (drawn) stream.write(drawn);
      },
      done() {
        if (drawn) stream.write('\n');
        drawn = '';
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
    notice(message) {
      stream.write(`${now().toISOString()} ${message}\n`);
    },
    done() {},
  };
}
