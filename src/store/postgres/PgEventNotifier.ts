import pg from 'pg';
import { EVENTS_CHANNEL } from './PgHistoryStore.js';

/** Back-off between reconnect attempts of the LISTEN connection. */
const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5_000;
/** Safety net: a wake-up this often even without notifications (a lost one costs at most this much delay). */
const POLL_MS = 5_000;
export const LISTENER_APPLICATION_NAME = 'rollplane-events-listener';
/** Heartbeats in flight this many intervals without an answer mean the connection is lost, even though it is open. */
const HEARTBEATS_BEFORE_LOST = 6;

/**
 * Tells this replica that events may have been committed — by any replica — so that it reads them from the table
 * (`id > last published`) and feeds its own subscribers (research/postgres-spike.md §5). A wake-up carries no event,
 * at most the last id of the commit that sent it (`wake`'s payload; none for the periodic and reconnect wake-ups):
 * notifications are lost while disconnected, folded within a transaction and capped in size, so the table is the
 * only source. One dedicated connection (LISTEN cannot share a pool connection), which LISTENs before each catch-up
 * so nothing committed in between is missed, reconnects with back-off, and wakes up once on every (re)connect.
 */
export class PgEventNotifier {
  private client: pg.Client | undefined;
  private stopped = false;
  private delay = RECONNECT_MIN_MS;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private readonly poll: NodeJS.Timeout;
  /** The connection was lost (or could not be made) since the last one listened. */
  private lost = false;
  private readonly heartbeat: NodeJS.Timeout | undefined;
  /** When the last answered heartbeat (or LISTEN) was sent: everything committed before it has been delivered. */
  private heardAt = 0;
  /** When the heartbeat still unanswered was sent. */
  private beatSentAt: number | undefined;

  constructor(
    private readonly url: string,
    private readonly wake: (payload?: string) => void,
    private readonly onError: (error: Error) => void = () => {},
    /** Called when the connection listens again after it was lost: the database was unreachable and is back. */
    private readonly onReconnected: () => void = () => {},
    /** Another channel (token revocations, history writes); `wake` receives each notification's payload. */
    private readonly channel: string = EVENTS_CHANNEL,
    /** Called when the connection is lost (or the first one could not be made): notifications stop arriving. */
    private readonly onLost: () => void = () => {},
    /**
     * `heartbeatMs`: a `SELECT 1` on the connection this often. A connection can stay open and deliver nothing (a
     * half-open TCP connection behind a NAT or firewall, a stalled server): only a round trip tells. PostgreSQL sends a
     * session's pending notifications before it answers, so an answered heartbeat proves that everything committed
     * before it was sent has arrived (`heardAt`); one left unanswered for several intervals counts as a lost connection.
     */
    options: { heartbeatMs?: number } = {},
  ) {
    this.poll = setInterval(() => this.wake(), POLL_MS);
    this.poll.unref();
    if (options.heartbeatMs) {
      this.heartbeat = setInterval(() => this.beat(options.heartbeatMs!), options.heartbeatMs);
      this.heartbeat.unref();
    }
  }

  /**
   * When the connection last proved that it delivers (heartbeats only): notifications of every commit before this
   * time have arrived. 0 while not connected.
   */
  deliveredBefore(): number {
    return this.client ? this.heardAt : 0;
  }

  private beat(intervalMs: number): void {
    const client = this.client;
    if (!client) return;
    const now = Date.now();
    if (this.beatSentAt !== undefined) {
      if (now - this.beatSentAt > HEARTBEATS_BEFORE_LOST * intervalMs) this.reconnect(client);
      return;
    }
    this.beatSentAt = now;
    client.query('SELECT 1').then(
      () => {
        if (this.client !== client) return;
        this.heardAt = now;
        this.beatSentAt = undefined;
      },
      // The connection's 'error' or 'end' handler reconnects.
      () => undefined,
    );
  }

  /** Resolves once the first connection listens (or failed: it keeps retrying in the background). */
  async start(): Promise<void> {
    await this.connect();
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({
      connectionString: this.url,
      keepAlive: true,
      application_name: this.channel === EVENTS_CHANNEL ? LISTENER_APPLICATION_NAME : `${this.channel}-listener`,
    });
    client.on('notification', (message) => this.wake(message.payload));
    client.on('error', (error) => {
      this.onError(error);
      this.reconnect(client);
    });
    client.on('end', () => this.reconnect(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${this.channel}`);
    } catch (error) {
      this.onError(error as Error);
      this.reconnect(client);
      return;
    }
    if (this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.heardAt = Date.now();
    this.beatSentAt = undefined;
    this.delay = RECONNECT_MIN_MS;
    // Anything committed while this replica was not listening.
    this.wake();
    if (this.lost) {
      this.lost = false;
      this.onReconnected();
    }
  }

  private reconnect(client: pg.Client): void {
    if (this.stopped || this.reconnectTimer || (this.client && this.client !== client)) return;
    if (!this.lost) this.onLost();
    this.lost = true;
    this.client = undefined;
    this.beatSentAt = undefined;
    client.removeAllListeners('end');
    void client.end().catch(() => undefined);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      void this.connect();
    }, this.delay);
    this.delay = Math.min(RECONNECT_MAX_MS, this.delay * 2);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.poll);
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = undefined;
    if (client) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
    }
  }
}
