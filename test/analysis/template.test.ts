import { describe, expect, it } from 'vitest';
import { parseAnalysisTemplate, parseDuration, resolveArgs } from '../../src/analysis/template.js';
import { ValidationError } from '../../src/errors.js';

/** Argo Rollouts' documented Prometheus example, as YAML, with rollplane's own fields on one metric. */
const ARGO_YAML = `
apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata:
  name: success-rate
spec:
  args:
  - name: service-name
    value: dhcp
  - name: version
  metrics:
  - name: success-rate
    interval: 1m
    count: 5
    initialDelay: 30s
    # NOTE: prometheus queries return results in the form of a vector.
    successCondition: len(result) > 0 && result[0] >= 0.95
    failureLimit: 3
    provider:
      prometheus:
        address: http://prometheus.example.com:9090
        timeout: 20
        query: |
          sum(irate(
            istio_requests_total{reporter="source",destination_service=~"{{args.service-name}}",response_code!~"5.*"}[5m]
          )) /
          sum(irate(
            istio_requests_total{reporter="source",destination_service=~"{{args.service-name}}"}[5m]
          ))
  - name: errors
    interval: 10s
    count: 3
    failureCondition: result[0] > 0
    consecutiveErrorLimit: 2
    noData: WAIT(2m)
    minSamples: 3
    provider:
      prometheus:
        query: sum(rate(sim_dhcp_errors_total{version="{{args.version}}"}[30s]))
  dryRun:
  - metricName: err.*
`;

function refusal(input: unknown): { field: string; message: string } {
  try {
    parseAnalysisTemplate(input);
  } catch (error) {
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).code).toBe('BAD_USER_INPUT');
    return { field: String((error as ValidationError).details.field), message: (error as Error).message };
  }
  throw new Error('the template was accepted');
}

/** A valid template (bare spec) with `change` applied to its one metric. */
function withMetric(change: Record<string, unknown>, args: unknown[] = []): unknown {
  return {
    args,
    metrics: [{ name: 'm', successCondition: 'result[0] < 1', provider: { prometheus: { query: 'sum(rate(sim_dhcp_errors_total[30s]))' } }, ...change }],
  };
}

describe('analysis templates: the Prometheus subset of Argo Rollouts AnalysisTemplate', () => {
  it("accepts Argo's documented example as YAML and as JSON, with Argo's defaults and rollplane's fields", () => {
    const template = parseAnalysisTemplate(ARGO_YAML);
    expect(template.name).toBe('success-rate');
    expect(template.args).toEqual([
      { name: 'service-name', value: 'dhcp' },
      { name: 'version', value: undefined },
    ]);
    const [rate, errors] = template.metrics;
    expect(rate).toMatchObject({
      name: 'success-rate',
      intervalMs: 60_000,
      count: 5,
      initialDelayMs: 30_000,
      failureLimit: 3,
      inconclusiveLimit: 0,
      consecutiveErrorLimit: 4,
      dryRun: false,
      address: 'http://prometheus.example.com:9090',
      timeoutMs: 20_000,
      noData: { kind: 'INCONCLUSIVE' },
      minSamples: 1,
    });
    expect(rate!.successCondition!.threshold).toBe(0.95);
    expect(errors).toMatchObject({
      failureLimit: 0,
      consecutiveErrorLimit: 2,
      dryRun: true,
      noData: { kind: 'WAIT', maxMs: 120_000 },
      minSamples: 3,
      timeoutMs: 30_000,
    });
    const asJson = parseAnalysisTemplate(JSON.stringify(JSON.parse(template.source)));
    expect(asJson.metrics.map((m) => m.name)).toEqual(['success-rate', 'errors']);
    // One measurement when neither count nor interval is given.
    expect(parseAnalysisTemplate(withMetric({})).metrics[0]).toMatchObject({ count: 1, intervalMs: undefined });
    expect(parseAnalysisTemplate(withMetric({ count: '2', interval: '1m30s' })).metrics[0]).toMatchObject({ count: 2, intervalMs: 90_000 });
  });

  it('resolves arguments: the template values and the built-ins; refuses a value that could change the query', () => {
    const template = parseAnalysisTemplate(ARGO_YAML);
    expect(resolveArgs(template.metrics[1]!.query, template, { version: 'v0.3.1' })).toBe('sum(rate(sim_dhcp_errors_total{version="v0.3.1"}[30s]))');
    expect(() => resolveArgs(template.metrics[1]!.query, template, {})).toThrow(/has no value for this run/);
    // A gate's config.args overrides the template's own value (attack 19, F3: the template's default was queried).
    const own = template.metrics[0]!.query;
    expect(resolveArgs(own, template, {})).toContain('destination_service=~"dhcp"');
    expect(resolveArgs(own, template, { 'service-name': 'dns' })).toContain('destination_service=~"dns"');
    expect(() => resolveArgs(template.metrics[1]!.query, template, { version: 'v1"} or vector(1) #' })).toThrow(/quote/);
  });

  it('refuses an unknown provider or field, naming its path', () => {
    expect(refusal(withMetric({ provider: { datadog: { query: 'x' } } }))).toMatchObject({ field: 'metrics[0].provider.datadog' });
    expect(refusal(withMetric({ provider: { prometheus: { query: 'up' }, web: {} } })).field).toBe('metrics[0].provider.web');
    expect(refusal(withMetric({ provider: { prometheus: { query: 'up', authentication: {} } } })).field).toBe('metrics[0].provider.prometheus.authentication');
    expect(refusal(withMetric({ successConditon: 'result[0] < 1' })).field).toBe('metrics[0].successConditon');
    expect(refusal(withMetric({ consecutiveSuccessLimit: 2 })).field).toBe('metrics[0].consecutiveSuccessLimit');
    expect(
      refusal({ apiVersion: 'argoproj.io/v1alpha1', kind: 'AnalysisTemplate', spec: { ...(withMetric({}) as object), measurementRetention: [] } }),
    ).toMatchObject({
      field: 'spec.measurementRetention',
      message: expect.stringMatching(/keeps every measurement/),
    });
    expect(refusal({ apiVersion: 'argoproj.io/v1alpha1', kind: 'Rollout', spec: {} }).field).toBe('kind');
  });

  it("refuses an address that is not a server's root: a query string, a fragment, a user or password (attack 19, F2, F8)", () => {
    for (const address of ['http://127.0.0.1:4720/metrics?', 'http://prom:9090/#x', 'http://admin:hunter2@prom:9090/', 'ftp://prom', 'http://a b']) {
      const refused = refusal(withMetric({ provider: { prometheus: { address, query: 'up' } } }));
      expect(refused.field, address).toMatch(/provider\.prometheus\.address$/);
    }
    expect(refusal(withMetric({ provider: { prometheus: { address: 'http://u:p@prom:9090', query: 'up' } } })).message).toMatch(/user or password/);
  });

  it('bounds what one metric can measure and keep (attack 19, F5): count, durations, a run of a week, argument values', () => {
    const cases: [Record<string, unknown>, unknown[], RegExp][] = [
      [{ interval: '1s', count: 10_001 }, [], /count.*at most 10000/],
      [{ interval: '99999999999h', count: 2 }, [], /interval.*at most 24h/],
      [{ initialDelay: '25h' }, [], /initialDelay.*at most 24h/],
      [{ noData: 'WAIT(100000000h)' }, [], /noData.*at most 24h/],
      [{ interval: '24h', count: 8 }, [], /more than 7 days/],
      [{ interval: '1s', count: 2, consecutiveErrorLimit: 1e12 }, [], /consecutiveErrorLimit.*at most/],
      [{}, [{ name: 'big', value: 'x'.repeat(1_025) }], /args\[0\]\.value: is longer than 1024/],
      [{}, [{ name: '__proto__', value: 'x' }], /cannot name an argument/],
    ];
    for (const [change, args, message] of cases) expect(refusal(withMetric(change, args)).message).toMatch(message);
    expect(() => parseAnalysisTemplate(withMetric({ interval: '1h', count: 24 }))).not.toThrow();
  });

  it('bounds a query once its arguments are in (attack 23, G1–G3): at submit with the values known, and at each run', () => {
    // 16 KB of template using a 1 KB argument 1,637 times: 1.68 MB sent to Prometheus and kept per run.
    const repeated = `up{a="${'{{args.b}}'.repeat(1_637)}"}`;
    const big = withMetric({ provider: { prometheus: { query: repeated } } }, [{ name: 'b', value: 'x'.repeat(1_024) }]);
    expect(refusal(big)).toMatchObject({
      field: 'metrics[0].provider.prometheus.query',
      message: expect.stringMatching(/resolves to 1676\d{3} characters with the arguments given, more than 32768/),
    });
    // The same through a baseline query, and an argument without a value given at submit by config.args.
    const viaBaseline = withMetric({ baseline: { query: repeated, direction: 'increase', maxRatio: 1.5 } }, [{ name: 'b', value: 'x'.repeat(1_024) }]);
    expect(refusal(viaBaseline).field).toBe('metrics[0].baseline.query');
    expect(() => parseAnalysisTemplate(withMetric({ provider: { prometheus: { query: repeated } } }, [{ name: 'b' }]), { b: 'x'.repeat(1_024) })).toThrow(
      /more than 32768/,
    );
    // Short values pass; the built-ins count as empty at submit (their values come with each run) …
    expect(() => parseAnalysisTemplate(withMetric({ provider: { prometheus: { query: repeated } } }, [{ name: 'b', value: 'x' }]))).not.toThrow();
    const byTarget = withMetric({ provider: { prometheus: { query: `up{t=~"${'{{args.target}}'.repeat(200)}"}` } } }, [{ name: 'target' }]);
    const template = parseAnalysisTemplate(byTarget);
    // … and a run's own values are bounded when it measures, before the text is built.
    expect(resolveArgs(template.metrics[0]!.query, template, { target: 'default/net-1' })).toContain('default/net-1');
    expect(() => resolveArgs(template.metrics[0]!.query, template, { target: 'n'.repeat(200) })).toThrow(/resolves to more than 32768 characters/);
  });

  it('refuses at submit an argument value that could never be measured, and names a name declared twice (attack 23, G4, G6)', () => {
    // … and control characters: an ESC sequence rewrote the terminal of whoever printed the measurements (attack 24, H4).
    for (const value of ['a"b', "a'b", 'a`b', 'a}b', 'a\\b', 'a\nb', '{{args.y}}', '\u001b[2Kx', 'a\tb', 'a\u007fb', 'a\u0085b', 'a\u2028b']) {
      expect(refusal(withMetric({}, [{ name: 'v', value }])).message, JSON.stringify(value)).toMatch(
        /args\[0\]\.value: contains a quote, backslash, brace or control character/,
      );
    }
    expect(() => parseAnalysisTemplate(withMetric({}, [{ name: 'v', value: 'ünïcode-ok_1.2/3' }]))).not.toThrow();
    expect(refusal(withMetric({}, [{ name: 'v' }, { name: 'v', value: 'x' }]))).toMatchObject({
      field: 'args[1].name',
      message: expect.stringMatching(/"v" is declared twice/),
    });
  });

  it("refuses a metadata.name that is not a Kubernetes object's name (it labels /metrics series: attack 19, F9)", () => {
    const named = (name: string) => ({ apiVersion: 'argoproj.io/v1alpha1', kind: 'AnalysisTemplate', metadata: { name }, spec: withMetric({}) });
    expect(refusal(named('a"} 1\nx{'))).toMatchObject({ field: 'metadata.name' });
    expect(refusal(named('Upper'))).toMatchObject({ field: 'metadata.name' });
    expect(parseAnalysisTemplate(named('success-rate.v2')).name).toBe('success-rate.v2');
  });

  it('refuses a YAML `__proto__` key as any unknown field, saying what is accepted (attack 19, F12)', () => {
    const yaml =
      'apiVersion: argoproj.io/v1alpha1\nkind: AnalysisTemplate\nmetadata: {name: v}\n__proto__: {polluted: yes}\nspec: {metrics: [{name: m, provider: {prometheus: {query: up}}}]}\n';
    expect(refusal(yaml)).toMatchObject({ field: '__proto__', message: expect.stringMatching(/is not supported \(rollplane accepts /) });
  });

  it('refuses a condition indexing the result without a length guard', () => {
    expect(refusal(withMetric({ successCondition: 'result[1] < 1' }))).toMatchObject({
      field: 'metrics[0].successCondition',
      message: expect.stringMatching(/result\[1\] is not guarded/),
    });
    expect(refusal(withMetric({ failureCondition: 'result[2] > 0' })).field).toBe('metrics[0].failureCondition');
  });

  it('refuses a query that cannot be PromQL (a small syntax check; Prometheus judges the rest)', () => {
    const query = (q: string) => refusal(withMetric({ provider: { prometheus: { query: q } } }));
    expect(query('sum(rate(x[5m])').message).toMatch(/"\(" at 4 is not closed/);
    expect(query('x{pool="net-1"').message).toMatch(/not closed/);
    expect(query('x{pool=net-1}').message).toMatch(/label matchers/);
    expect(query('rate(x[5 minutes])').message).toMatch(/not a duration/);
    expect(query('x{pool="a"}]').message).toMatch(/closes nothing/);
    expect(query('x{pool="a}').message).toMatch(/not closed/);
    expect(query('   ').message).toMatch(/is empty/);
    expect(query('x; drop').message).toMatch(/unexpected ";"/);
    expect(query('x{a="b"').field).toBe('metrics[0].provider.prometheus.query');
    for (const ok of [
      'up',
      'sum by (pool) (rate(x{a="b",c=~"d.*",}[1m30s]))',
      'max_over_time(x[30m:1m])',
      "x{a='b'} > 0.5 # comment",
      'histogram_quantile(0.99, sum(rate(h_bucket[5m])) by (le))',
    ]) {
      expect(() => parseAnalysisTemplate(withMetric({ provider: { prometheus: { query: ok } } })), ok).not.toThrow();
    }
  });

  it('refuses an argument with no value, an undeclared placeholder, and valueFrom', () => {
    expect(refusal(withMetric({}, [{ name: 'service' }]))).toMatchObject({ field: 'args[0].value', message: expect.stringMatching(/has no value/) });
    expect(refusal(withMetric({}, [{ name: 'cluster', value: 'x' }])).message).toMatch(/resolved by rollplane/);
    expect(refusal(withMetric({}, [{ name: 's', valueFrom: { secretKeyRef: {} } }])).field).toBe('args[0].valueFrom');
    expect(refusal(withMetric({ provider: { prometheus: { query: 'x{a="{{args.nope}}"}' } } })).message).toMatch(
      /\{\{args\.nope\}\}, which the template does not declare/,
    );
  });

  it('refuses what would never end or never decide: interval without count, count > 1 without interval, limits beyond count', () => {
    expect(refusal(withMetric({ interval: '1m' })).field).toBe('metrics[0].count');
    expect(refusal(withMetric({ count: 3 })).field).toBe('metrics[0].interval');
    expect(refusal(withMetric({ count: 2, interval: '1m', failureLimit: 3 })).field).toBe('metrics[0].failureLimit');
    expect(refusal(withMetric({ count: 2, interval: '100ms' })).message).toMatch(/at least 1s/);
    expect(refusal(withMetric({ count: -1 })).field).toBe('metrics[0].count');
    expect(refusal(withMetric({ noData: 'SKIP' })).message).toMatch(/FAIL, PASS, INCONCLUSIVE or WAIT/);
    expect(refusal(withMetric({ noData: 'WAIT(soon)' })).field).toBe('metrics[0].noData');
    expect(refusal(withMetric({ minSamples: 0 })).field).toBe('metrics[0].minSamples');
    expect(refusal({ metrics: [] }).field).toBe('metrics');
    expect(refusal('metrics: [').message).toMatch(/neither JSON nor YAML/);
    expect(refusal({ metrics: [withMetric({}), withMetric({})].map((t) => (t as { metrics: unknown[] }).metrics[0]) }).message).toMatch(/used twice/);
  });

  it("reads rollplane's baseline comparison and refuses a bad one", () => {
    const baseline = {
      query: 'sum(rate(sim_dhcp_errors_total{version="{{args.baselineVersion}}"}[1m]))',
      direction: 'increase',
      maxRatio: 1.2,
      critical: true,
    };
    expect(parseAnalysisTemplate(withMetric({ baseline })).metrics[0]!.baseline).toEqual({ ...baseline, minDelta: 0 });
    expect(refusal(withMetric({ baseline: { ...baseline, direction: 'up' } })).field).toBe('metrics[0].baseline.direction');
    expect(refusal(withMetric({ baseline: { ...baseline, maxRatio: 0 } })).field).toBe('metrics[0].baseline.maxRatio');
    expect(refusal(withMetric({ baseline: { ...baseline, window: '5m' } })).field).toBe('metrics[0].baseline.window');
    expect(refusal(withMetric({ baseline: { ...baseline, query: 'sum(' } })).field).toBe('metrics[0].baseline.query');
    expect(refusal(withMetric({ baseline: { ...baseline, query: 'x{v="{{args.old}}"}' } })).message).toMatch(/\{\{args\.old\}\}/);
  });

  it('reads durations as Argo writes them', () => {
    expect(parseDuration('500ms', 'f')).toBe(500);
    expect(parseDuration('1h30m', 'f')).toBe(5_400_000);
    expect(parseDuration('2.5s', 'f')).toBe(2500);
    expect(() => parseDuration('5', 'f')).toThrow(ValidationError);
    expect(() => parseDuration('1d', 'f')).toThrow(ValidationError);
  });
});
