import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killIfRunning, spawnService, startService, type ServiceProcess } from '../../helpers/child.js';

/** What a person starting the service sees: the banner, and one clear line when it cannot start. */

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-startup-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the service to its exit; resolves with its code and output. */
function runToExit(env: Record<string, string>, args: string[] = []): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnService({ ROLLPLANE_SIM_FLEET: 'empty', LOG_FORMAT: 'pretty', ...env }, args);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stdout, stderr })));
}

function listenOnFreePort(): Promise<Server> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

describe('starting the service', () => {
  it('prints once where it listens, the web UI, which Kubernetes it drives, where the history is and that authentication is off', async () => {
    let service: ServiceProcess | undefined;
    try {
      service = await startService({ DATABASE_URL: `file:${path.join(dir, 'banner.db')}`, ROLLPLANE_KUBE: 'sim' });
      const ui = service.url.replace(/graphql$/, '');
      const out = service.stdout();
      expect(out).toContain(`rollplane listening on ${service.url}\n`);
      expect(out).toContain(`  web UI      ${ui}\n`);
      expect(out).toMatch(/ {2}Kubernetes {2}the embedded simulator \(fleet empty\), KUBECONFIG=\S+kubeconfig\n/);
      expect(out).toMatch(/ {2}history {5}file:\S+banner\.db \(kept across restarts; the embedded simulator starts afresh on every start/);
      expect(out).toContain('  auth        off: anyone who can reach 127.0.0.1 may call the API');
      // No admin token to copy while nothing asks for one, and no second warning about it.
      expect(service.stderr()).not.toMatch(/rp_|authentication is OFF/);
      expect((await fetch(ui, { headers: { accept: 'text/html' } })).status).toBe(200);
    } finally {
      await killIfRunning(service);
    }
  });

  it('with its port in use, says so in one line naming the port and --port, before starting anything', async () => {
    const taken = await listenOnFreePort();
    try {
      const port = (taken.address() as { port: number }).port;
      const run = await runToExit({ PORT: String(port), DATABASE_URL: `file:${path.join(dir, 'port.db')}` });
      expect(run.code).toBe(1);
      expect(run.stderr.trim()).toBe(
        `rollplane: failed to start: port ${port} on 127.0.0.1 is already in use: stop what uses it, or choose another port with --port (or PORT)`,
      );
      expect(run.stdout).toBe('');
    } finally {
      taken.close();
    }
  });

  it('with a kubeconfig whose cluster does not answer, fails at once naming the context and server instead of never listening', async () => {
    const closed = await listenOnFreePort();
    const port = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    const kubeconfig = path.join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{ name: gone, cluster: { server: "http://127.0.0.1:' + port + '", insecure-skip-tls-verify: true } }]',
        'users: [{ name: me, user: { token: t } }]',
        'contexts: [{ name: staging, context: { cluster: gone, user: me } }]',
        'current-context: staging',
      ].join('\n'),
    );
    const run = await runToExit({ KUBECONFIG: kubeconfig, PORT: '0', DATABASE_URL: `file:${path.join(dir, 'kube.db')}` });
    expect(run.code).toBe(1);
    expect(run.stdout).not.toContain('listening');
    expect(run.stderr).toContain(
      `rollplane: failed to start: cannot reach Kubernetes: context "staging" (http://127.0.0.1:${port}) from ${kubeconfig}: the Kubernetes API is unreachable (ECONNREFUSED). Choose another with --kube sim`,
    );
  });
});
