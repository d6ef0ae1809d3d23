import type { Logger } from '../log.js';

export interface Stoppable {
  stop(): Promise<void>;
}

/** Registers a part `build` started (or the function that stops it) and hands it back. */
export type Started = <P extends Stoppable | (() => Promise<void>)>(part: P) => P;

/**
 * The one unwind (docs/adr/0038): `build` hands every part it starts to `started`, and what it returns gets a `stop`
 * that stops those parts in reverse order — once, however often it is called. If `build` throws, the parts started so
 * far are stopped the same way before the error goes on, so a failing starter leaves nothing running. A part that
 * fails to stop is logged and the others still stop.
 */
export async function compose<T extends object>(logger: Logger, build: (started: Started) => Promise<T>): Promise<Omit<T, 'stop'> & Stoppable> {
  const parts: (() => Promise<void>)[] = [];
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      for (const part of parts.reverse()) await part().catch((error: unknown) => logger.error({ err: error }, 'error during shutdown'));
    })());
  const started: Started = (part) => {
    parts.push(typeof part === 'function' ? part : () => part.stop());
    return part;
  };
  try {
    return { ...(await build(started)), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
