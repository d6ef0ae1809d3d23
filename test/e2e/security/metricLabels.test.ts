import { Agent, request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../helpers/app.js';
import { collect, wsClient } from '../../helpers/graphql.js';

/**
 * Issue 18, finding 3: the client-chosen operation name was a Prometheus label, so 2,000 requests grew /metrics to
 * 20 MB and a heap-capped server died. Labels now come from the schema's root field names, a closed set.
 */
describe('metric labels under hostile operation names', () => {
  let app: TestApp;
  beforeAll(async () => {
    // 10,000 operations at the least cost each (50) are five bursts of the default budget: this test is about labels,
    // so the caller's budget is out of the way (inputSizes.test.ts tests the budget).
    app = await startTestApp({ env: { ROLLPLANE_QUERY_COST_PER_MINUTE: '1000000000', ROLLPLANE_QUERY_COST_BURST: '1000000000' } });
  });
  afterAll(async () => {
    await app?.close();
  });

  const seriesOf = (text: string) => text.split('\n').filter((l) => l.startsWith('rollplane_graphql_operations_total{'));

  it('keeps /metrics the same size after 10,000 distinct operation names over HTTP and WebSocket', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 20 });
    const send = (i: number) =>
      new Promise<void>((resolve, reject) => {
        const req = request(app.url, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
          res.resume();
          res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`))));
        });
        req.on('error', reject);
        req.end(JSON.stringify({ query: `query Op_${i}_${'x'.repeat(200)} { serverInfo { version } }` }));
      });
    await send(99_999);
    const before = await (await fetch(`${app.baseUrl}/metrics`)).text();
    for (let i = 0; i < 10_000; i += 50) await Promise.all(Array.from({ length: 50 }, (_, j) => send(i + j)));
    agent.destroy();
    const client = wsClient(app.url);
    for (let i = 0; i < 200; i++) {
      const op = collect(client, `query Ws_${i} { serverInfo { version } }`);
      await op.waitFor(1);
    }
    await client.dispose();
    const after = await (await fetch(`${app.baseUrl}/metrics`)).text();
    expect(after).not.toContain('Op_');
    expect(after).not.toContain('Ws_');
    // One more series for the WebSocket transport; otherwise only the counts' digits changed.
    expect(seriesOf(after).length).toBeLessThanOrEqual(seriesOf(before).length + 1);
    expect(after.length).toBeLessThan(before.length + 2_000);
    expect(after).toMatch(/rollplane_graphql_operations_total\{field="serverInfo",type="query",result="ok",transport="http"\} 10001/);
    expect(after).toMatch(/rollplane_graphql_operations_total\{field="serverInfo",type="query",result="ok",transport="ws"\} 200/);
  }, 300_000);
});
