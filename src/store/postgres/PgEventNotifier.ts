import pg from 'pg';
import { EVENTS_CHANNEL } from './PgHistoryStore.js';

/** Back-off between reconnect attempts of the LISTEN connection. */
const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5_000;
/** Safety net: a wake-up this often even without notifications (a lost one costs at most this much delay). */
const POLL_MS = 5_000;
export const LISTENER_APPLICATION_NAME = 'rollplane-events-listener';

/**
 * Tells this replica that events may have been committed — by any replica — so that it reads them from the table
 * (`id > last published`) and feeds its own subscribers (research/postgres-spike.md §5). A wake-up carries no event:
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

  constructor(
    private readonly url: string,
    private readonly wake: (payload?: string) => void,
    private readonly onError: (error: Error) => void = () => {},
    /** Called when the connection listens again after it was lost: the database was unreachable and is back. */
    private readonly onReconnected: () => void = () => {},
    /** Another channel (token revocations): `wake` then receives each notification's payload. */
    private readonly channel: string = EVENTS_CHANNEL,
    /** Called when the connection is lost (or the first one could not be made): notifications stop arriving. */
    private readonly onLost: () => void = () => {},
  ) {
    this.poll = setInterval(() => this.wake(), POLL_MS);
    this.poll.unref();
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
    client.on('notification', (message) => this.wake(this.channel === EVENTS_CHANNEL ? undefined : message.payload));
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
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = undefined;
    if (client) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
    }
  }
}
