/**
 * Who may read a replay page from the store right now. A subscriber catching up holds a page of events in memory while
 * it sends them; without a bound, a thousand subscriptions resuming at once (a wall of screens after a restart, or a
 * client that opens a hundred `after:` subscriptions and stops reading) hold a thousand pages at once. So:
 * - per socket, one page at a time: the subscriptions of one socket share its send budget, so a second page could not
 *   be sent anyway until the first has drained;
 * - across sockets, at most `concurrency` pages at a time.
 * A slot is held only while a page is read and written to the socket, never while a subscriber waits for its socket to
 * drain, so a client that stops reading delays nobody else.
 */
export class ReplaySlots {
  private free: number;
  private readonly waiting: (() => void)[] = [];
  /** Per socket, the end of the chain of pages queued on it. */
  private readonly tails = new WeakMap<object, Promise<void>>();

  constructor(concurrency: number) {
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError(`replay concurrency must be a positive integer, got ${concurrency}`);
    this.free = concurrency;
  }

  /** Runs `replayPage` once the socket has no other page in flight and a global slot is free. */
  async run<T>(socket: object, replayPage: () => Promise<T>): Promise<T> {
    const before = this.tails.get(socket) ?? Promise.resolve();
    let done!: () => void;
    const mine = new Promise<void>((resolve) => (done = resolve));
    const tail = before.then(() => mine);
    this.tails.set(socket, tail);
    try {
      await before;
      await this.acquire();
      try {
        return await replayPage();
      } finally {
        this.release();
      }
    } finally {
      done();
      if (this.tails.get(socket) === tail) this.tails.delete(socket);
    }
  }

  private acquire(): Promise<void> | void {
    if (this.free > 0) {
      this.free--;
      return;
    }
    return new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}
