import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gql } from '../../helpers/graphql.js';
import { startService } from '../../helpers/child.js';

/**
 * Issue 18, finding 7: SIGTERM exited 143 within milliseconds, because Apollo's own signal handler re-raised it before
 * rollplane's drain ran. The lifecycle test missed it since Apollo installs no handler when NODE_ENV is `test` — which
 * vitest sets and the child inherited. These children run with NODE_ENV=production, as a deployment does.
 */
describe.each(['SIGTERM', 'SIGINT'] as const)('%s in the middle of a rollout', (signal) => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-signal-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('drains, closes the database and exits 0, saying so in the log', async () => {
    const service = await startService({
      NODE_ENV: 'production',
      LOG_LEVEL: 'info',
      DATABASE_URL: `file:${path.join(dir, 'rollplane.db')}`,
      ROLLPLANE_SIM_FLEET: 'demo',
    });
    const bump = await gql(service.url, 'mutation { bumpAgentImage(input: { image: "rancher/harvester-vm-dhcp-agent:v0.3.1" }) { rollout { id } } }');
    expect(bump.errors).toBeUndefined();
    const id = bump.data.bumpAgentImage.rollout.id as string;
    await expect.poll(async () => (await gql(service.url, `{ rollout(id: "${id}") { state } }`)).data?.rollout?.state, { timeout: 20_000 }).toBe('PROGRESSING');
    service.child.kill(signal);
    const exit = await service.exited;
    expect(exit).toEqual({ code: 0, signal: null });
    const lines = service
      .stdout()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg?: string; signal?: string });
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'signal received', signal }));
    const messages = lines.map((l) => l.msg);
    expect(messages).toContain('shutting down');
    expect(messages.at(-1)).toBe('stopped');
  });
});
