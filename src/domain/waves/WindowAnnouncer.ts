import type { EventLog } from '../EventLog.js';
import type { WindowPolicies } from '../gates/WindowPolicies.js';

/** The longest the announcer sleeps: a policy created or changed meanwhile is announced within it. */
export const ANNOUNCE_RECHECK_MS = 60_000;

export interface WindowAnnouncerOptions {
  windows: WindowPolicies;
  log: EventLog;
  /** The registered member clusters with their labels, as registered now. */
  clusters: () => Promise<readonly { name: string; labels: Record<string, string> }[]>;
  logger: { warn(obj: object, msg: string): void };
  now?: () => number;
}

/**
 * Announces maintenance-window policies opening and closing (WindowPolicies.announce), on the leader: once when it
 * starts leading, then exactly when the earliest policy changes next, and at least every ANNOUNCE_RECHECK_MS (a policy
 * written meanwhile, a cluster registered). Each change is announced once (the policy's row is compared and set with
 * its event), so a leader change in between neither repeats nor loses one.
 */
export class WindowAnnouncer {
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private readonly now: () => number;

  constructor(private readonly options: WindowAnnouncerOptions) {
    this.now = options.now ?? Date.now;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.schedule(0);
  }

  stop(): void {
    this.running = false;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** One look: announces what changed; returns when to look again (ms from now). */
  async tick(): Promise<number> {
    const { windows, log, clusters } = this.options;
    const next = await windows.announce(await clusters(), log, new Date(this.now()));
    // A few ms past the boundary: the policy has changed by then on every clock reading.
    return next === null ? ANNOUNCE_RECHECK_MS : Math.min(ANNOUNCE_RECHECK_MS, Math.max(10, next.getTime() - this.now() + 5));
  }

  private schedule(afterMs: number): void {
    this.timer = setTimeout(() => {
      this.tick().then(
        (next) => this.running && this.schedule(next),
        (error: unknown) => {
          this.options.logger.warn({ err: error }, 'cannot announce maintenance window changes; trying again');
          if (this.running) this.schedule(ANNOUNCE_RECHECK_MS / 6);
        },
      );
    }, afterMs);
    this.timer.unref();
  }
}
