import type { ServerResponse } from 'node:http';

/** One readiness condition; `check` throws (or rejects) with the reason when not ready. */
export interface ReadinessCheck {
  name: string;
  check(): Promise<void>;
}

const CHECK_TIMEOUT_MS = 2_000;

async function runCheck(check: ReadinessCheck): Promise<{ name: string; ok: boolean; error?: string }> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check.check(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
      }),
    ]);
    return { name: check.name, ok: true };
  } catch (error) {
    return { name: check.name, ok: false, error: error instanceof Error ? error.message : String(error) };
  } finally {
    clearTimeout(timer);
  }
}

/** `/readyz`: 200 when every check passes, else 503; the body lists each check either way. */
export async function writeReadiness(res: ServerResponse, checks: readonly ReadinessCheck[], shuttingDown: boolean): Promise<void> {
  const results = shuttingDown ? [{ name: 'shutdown', ok: false, error: 'shutting down' }] : await Promise.all(checks.map(runCheck));
  const ready = results.every((r) => r.ok);
  res.statusCode = ready ? 200 : 503;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.end(JSON.stringify({ status: ready ? 'ready' : 'not ready', checks: results }));
}
