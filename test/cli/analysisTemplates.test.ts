import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { gql } from '../helpers/graphql.js';
import { runCli } from './cliHarness.js';

/**
 * Analysis templates by name (issue 33, ADR 0071) over the API and the CLI: stored, listed, replaced and deleted with
 * clear codes; checked at submit exactly as an inline template is (the same field paths); named by `templateName` in
 * a rollout's `strategy.analysis` and a staged wave's ANALYSIS gate, whose text is copied into what the rollout keeps.
 * Prometheus is configured but never asked here (nothing is measured: dry runs and refusals only).
 */
const TEMPLATE = `apiVersion: argoproj.io/v1alpha1
kind: AnalysisTemplate
metadata: { name: dhcp-errors }
spec:
  args: [{ name: version }]
  metrics:
  - name: errors
    failureCondition: result[0] > 0
    provider:
      prometheus:
        query: sum(rate(sim_dhcp_errors_total{version="{{args.version}}"}[1m]))
`;
const IMAGE = 'rancher/harvester-vm-dhcp-agent:v0.3.1';

describe('analysis templates by name', () => {
  let app: TestApp;
  let dir: string;
  const env = () => ({ ROLLPLANE_URL: app.url });
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane-templates-'));
    app = await startTestApp({ env: { ROLLPLANE_SIM_FLEET: 'pools=2', ROLLPLANE_PROMETHEUS_URL: 'http://127.0.0.1:9' } });
  });
  afterAll(async () => {
    await app?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const create = (name: string, template: unknown) =>
    gql(app.url, 'mutation ($input: AnalysisTemplateInput!) { createAnalysisTemplate(input: $input) { name metrics template } }', {
      input: { name, template },
    });
  const bump = (strategy: unknown, extra: Record<string, unknown> = {}) =>
    gql(app.url, 'mutation ($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { rollout { strategy { analysis { every config } } } } }', {
      input: { image: IMAGE, strategy, dryRun: true, ...extra },
    });

  it('stores, lists, replaces and deletes a template through the CLI, with clear codes', async () => {
    const file = path.join(dir, 'errors.yaml');
    writeFileSync(file, TEMPLATE);
    const created = await runCli(['analysis-template', 'create', 'dhcp-errors', '--file', file], env());
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toBe('created analysis template dhcp-errors (errors)\n');
    expect((await runCli(['analysis-template', 'create', 'dhcp-errors', '--file', file], env())).stderr).toContain('[CONFLICT]');
    const listed = await runCli(['analysis-template', 'list'], env());
    expect(listed.stdout).toMatch(/dhcp-errors\s+errors\s+/);

    // Refused as an inline template is, naming the field under `input.template`; nothing changes.
    writeFileSync(file, TEMPLATE.replace('result[0] > 0', 'result[1] > 0'));
    const refused = await runCli(['analysis-template', 'update', 'dhcp-errors', '--file', file], env());
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('input.template.spec.metrics[0].failureCondition');
    writeFileSync(file, TEMPLATE.replace('name: errors', 'name: dhcp-errors'));
    const updated = await runCli(['analysis-template', 'update', 'dhcp-errors', '--file', file, '-o', 'json'], env());
    expect(updated.code, updated.stderr).toBe(0);
    expect(JSON.parse(updated.stdout).analysisTemplate).toMatchObject({ name: 'dhcp-errors', metrics: ['dhcp-errors'] });
    expect((await runCli(['analysis-template', 'update', 'nope', '--file', file], env())).stderr).toContain('[NOT_FOUND]');

    const deleted = await runCli(['analysis-template', 'delete', 'dhcp-errors'], env());
    expect(deleted.code, deleted.stderr).toBe(0);
    expect((await runCli(['analysis-template', 'delete', 'dhcp-errors'], env())).stderr).toContain('[NOT_FOUND]');
    expect((await gql(app.url, '{ analysisTemplates { name } }')).data.analysisTemplates).toEqual([]);
  });

  it('refuses a bad name and a template without a Prometheus to ask, over the API', async () => {
    const badName = await create('Not_A_Name', TEMPLATE);
    expect(badName.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(badName.errors?.[0]?.message).toMatch(/^input\.name: /);
    const unknownField = await create('x', TEMPLATE.replace('failureCondition', 'consecutiveSuccessLimit: 2\n    failureCondition'));
    expect(unknownField.errors?.[0]?.message).toMatch(/^input\.template\.spec\.metrics\[0\]\.consecutiveSuccessLimit: /);
  });

  it('a rollout names a stored template: its text is copied at submit; an unknown name or both forms are refused', async () => {
    expect((await create('errors', TEMPLATE)).errors).toBeUndefined();
    const named = await bump({ analysis: { every: 1, config: { templateName: 'errors' } } });
    expect(named.errors).toBeUndefined();
    const config = named.data.bumpAgentImage.rollout.strategy.analysis.config;
    expect(config.templateName).toBe('errors');
    expect(JSON.parse(config.template)).toMatchObject({ metadata: { name: 'dhcp-errors' }, spec: { metrics: [{ name: 'errors' }] } });

    const unknown = await bump({ analysis: { every: 1, config: { templateName: 'nope' } } });
    expect(unknown.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(unknown.errors?.[0]?.message).toBe('input.strategy.analysis.config.templateName: no analysis template is named "nope"');
    const both = await bump({ analysis: { every: 1, config: { templateName: 'errors', template: TEMPLATE } } });
    expect(both.errors?.[0]?.message).toMatch(/^input\.strategy\.analysis\.config\.templateName: give either template/);

    // A staged wave's gate names it too (resolved before the run is planned; an unknown name refused with its path).
    const staged = await gql(app.url, 'mutation ($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { dryRun } }', {
      input: {
        image: IMAGE,
        dryRun: true,
        waveStrategy: { waves: [{ name: 'all', clusters: { names: ['local'] }, after: { type: 'ANALYSIS', config: { templateName: 'nope' } } }] },
      },
    });
    expect(staged.errors?.[0]?.message).toBe('input.waveStrategy.waves[0].after.config.templateName: no analysis template is named "nope"');
  });
});
