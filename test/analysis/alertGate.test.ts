import { describe, expect, it } from 'vitest';
import { alertGateProgress, alertQuery, parseAlertGateConfig } from '../../src/analysis/alertGate.js';
import { type PrometheusClient, PrometheusError, type QueryResult } from '../../src/analysis/PrometheusClient.js';

/**
 * The alert gate's config, query and answers, with Prometheus's answers scripted;
 * test/analysis/alertGatePrometheus.test.ts runs it against a real Prometheus evaluating a rule file.
 */

const NOW = new Date('2026-12-10T12:00:00Z');

function answering(answer: QueryResult | Error): PrometheusClient & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    baseUrl: 'http://prometheus.test',
    async query(query: string) {
      asked.push(query);
      if (answer instanceof Error) throw answer;
      return answer;
    },
  } as unknown as PrometheusClient & { asked: string[] };
}

const alert = (alertname: string, labels: Record<string, string> = {}) => ({
  labels: { __name__: 'ALERTS', alertname, alertstate: 'firing', ...labels },
  value: 1,
});

describe('the alert gate', () => {
  it('reads its config with defaults, and refuses anything else with the field path (BAD_USER_INPUT)', () => {
    expect(parseAlertGateConfig({ alerts: ['DhcpErrors', 'DhcpErrors', 'node:down'] })).toEqual({
      alerts: ['DhcpErrors', 'node:down'],
      matchLabels: {},
      address: undefined,
      timeoutMs: 10_000,
      recheckMs: 30_000,
    });
    expect(
      parseAlertGateConfig({ alerts: ['A'], matchLabels: { cluster: 'edge-1' }, address: 'http://prom:9090', timeout: '5s', recheck: '1m' }),
    ).toMatchObject({ matchLabels: { cluster: 'edge-1' }, address: 'http://prom:9090', timeoutMs: 5000, recheckMs: 60_000 });
    const refusal = (config: unknown) => {
      try {
        parseAlertGateConfig(config, 'gates[0].config');
        return 'accepted';
      } catch (error) {
        expect(error).toMatchObject({ code: 'BAD_USER_INPUT' });
        return (error as Error).message;
      }
    };
    expect(refusal(null)).toBe('gates[0].config: must be an object');
    expect(refusal({ alerts: [] })).toBe('gates[0].config.alerts: must list 1 to 50 alert names');
    expect(refusal({ alerts: ['A|B'] })).toMatch(/^gates\[0\]\.config\.alerts\[0\]: "A\|B" is not an alert name/);
    expect(refusal({ alerts: ['A"}'] })).toMatch(/^gates\[0\]\.config\.alerts\[0\]: /);
    expect(refusal({ alerts: ['A'], alertstate: 'pending' })).toMatch(/^gates\[0\]\.config\.alertstate: is not supported/);
    expect(refusal({ alerts: ['A'], matchLabels: { alertstate: 'pending' } })).toMatch(/^gates\[0\]\.config\.matchLabels\.alertstate: is not a label/);
    expect(refusal({ alerts: ['A'], matchLabels: { 'bad-name': 'x' } })).toMatch(/^gates\[0\]\.config\.matchLabels\.bad-name: /);
    expect(refusal({ alerts: ['A'], matchLabels: { cluster: 3 } })).toBe('gates[0].config.matchLabels.cluster: must be a non-empty string');
    expect(refusal({ alerts: ['A'], address: 'file:///etc/passwd' })).toBe('gates[0].config.address: must be an http:// or https:// URL');
    expect(refusal({ alerts: ['A'], timeout: '10m' })).toBe('gates[0].config.timeout: must be between 1s and 120s');
  });

  it("asks Prometheus's ALERTS for the firing ones only, label values quoted", () => {
    expect(alertQuery({ alerts: ['DhcpErrors', 'NodeDown'], matchLabels: {} })).toBe('ALERTS{alertname=~"DhcpErrors|NodeDown",alertstate="firing"}');
    expect(alertQuery({ alerts: ['A'], matchLabels: { cluster: 'edge "1"\\' } })).toBe('ALERTS{alertname=~"A",alertstate="firing",cluster="edge \\"1\\"\\\\"}');
  });

  it('waits while an alert fires, naming them; passes when none does; never passes when Prometheus cannot say', async () => {
    const config = parseAlertGateConfig({ alerts: ['DhcpErrors', 'NodeDown'], recheck: '20s' });
    const until = new Date(NOW.getTime() + 20_000);
    const firing = answering({ type: 'vector', samples: [alert('NodeDown'), alert('DhcpErrors', { pool: 'net-1' }), alert('DhcpErrors', { pool: 'net-2' })] });
    expect(await alertGateProgress(config, firing, NOW)).toEqual({ state: 'WAITING', reason: 'alerts firing: DhcpErrors (2 series), NodeDown', until });
    expect(firing.asked).toEqual(['ALERTS{alertname=~"DhcpErrors|NodeDown",alertstate="firing"}']);
    expect(await alertGateProgress(config, answering({ type: 'vector', samples: [] }), NOW)).toEqual({
      state: 'PASSED',
      reason: 'no alert firing among DhcpErrors, NodeDown',
    });
    const down = new PrometheusError('UNREACHABLE', 'cannot reach Prometheus at http://prometheus.test: ECONNREFUSED');
    expect(await alertGateProgress(config, answering(down), NOW)).toEqual({
      state: 'WAITING',
      reason: 'cannot tell whether alerts fire (DhcpErrors, NodeDown): UNREACHABLE: cannot reach Prometheus at http://prometheus.test: ECONNREFUSED',
      until,
    });
    expect(await alertGateProgress(config, answering({ type: 'scalar', value: 1 }), NOW)).toMatchObject({
      state: 'WAITING',
      reason: expect.stringMatching(/answered a scalar/),
    });
    expect(await alertGateProgress(config, undefined, NOW)).toMatchObject({ state: 'WAITING', reason: expect.stringMatching(/no Prometheus configured/) });
  });
});
