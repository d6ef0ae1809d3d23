import type { ServerResponse } from 'node:http';

/**
 * One readiness condition; `check` throws (or rejects) with the reason when not ready. An `advisory` check never makes
 * the replica unready (taking it out of its Service would not help): its failure is listed under `warnings`, so that
 * an operator sees it before it becomes an outage (a filling disk).
 */
export interface ReadinessCheck {
  name: string;
  check(): Promise<void>;
  advisory?: boolean;
}

const CHECK_TIMEOUT_MS = 2_000;

async function runCheck(check: ReadinessCheck): Promise<{ name: string; ok: boolean; error?: string; advisory?: boolean }> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check.check(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
      }),
    ]);
    return { name: check.name, ok: true, ...(check.advisory ? { advisory: true } : {}) };
  } catch (error) {
    return { name: check.name, ok: false, error: error instanceof Error ? error.message : String(error), ...(check.advisory ? { advisory: true } : {}) };
  } finally {
    clearTimeout(timer);
  }
}

/** `/readyz`: 200 when every check passes, else 503; the body lists each check either way. */
export async function writeReadiness(res: ServerResponse, checks: readonly ReadinessCheck[], shuttingDown: boolean): Promise<void> {
  const ran = shuttingDown ? [{ name: 'shutdown', ok: false, error: 'shutting down' }] : await Promise.all(checks.map(runCheck));
  const results = ran.filter((r) => !('advisory' in r));
  const warnings = ran.filter((r) => 'advisory' in r && !r.ok).map(({ name, error }) => ({ name, warning: error }));
  const ready = results.every((r) => r.ok);
  res.statusCode = ready ? 200 : 503;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.end(JSON.stringify({ status: ready ? 'ready' : 'not ready', checks: results, ...(warnings.length > 0 ? { warnings } : {}) }));
}
