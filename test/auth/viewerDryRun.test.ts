import { readFileSync } from 'node:fs';
import path from 'node:path';
import { buildSchema } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { offersDryRun } from '../../src/graphql/operationFields.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { gql } from '../helpers/graphql.js';

/**
 * A viewer may preview a bump (`dryRun: true`): a CI preview step needs the plan, not deployer rights. Every other
 * shape of the same mutation keeps needing deployer, and the preview is audited like any mutation.
 */

const ADMIN = 'admin-secret-for-dry-runs-0123456789abcdef';
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const BUMP = 'mutation($input: BumpAgentImageInput!) { bumpAgentImage(input: $input) { dryRun created plan { name action } } }';
const IMAGE = 'rancher/harvester-vm-dhcp-agent:v0.3.9';

let app: TestApp;
let viewer: string;

beforeAll(async () => {
  app = await startTestApp({ env: { ROLLPLANE_AUTH: 'on', ROLLPLANE_ADMIN_TOKEN: ADMIN, ROLLPLANE_SIM_FLEET: 'pools=2,nodes=1' } });
  const created = await gql(app.url, 'mutation { createApiToken(input: { name: "ci-preview", role: viewer }) { secret } }', {}, bearer(ADMIN));
  viewer = created.data.createApiToken.secret;
});
afterAll(async () => {
  await app?.close();
});

const rollouts = async () => (await gql(app.url, '{ rollouts { totalCount } }', {}, bearer(ADMIN))).data.rollouts.totalCount as number;

describe('dry runs for viewers', () => {
  it('offers them exactly on the mutations whose input has dryRun: the kinds’ bumps (ADR 0051: no list names them)', () => {
    const schema = buildSchema(readFileSync(path.resolve(import.meta.dirname, '../../schema.graphql'), 'utf8'));
    const offering = Object.values(schema.getMutationType()!.getFields()).filter((field) => offersDryRun(field));
    expect(offering.map((field) => field.name).sort()).toEqual(['bumpAgentImage', 'bumpClusterVersion', 'bumpNodeAgentImage']);
  });

  it('lets a viewer preview a bump, changes nothing, and audits it', async () => {
    const before = await rollouts();
    const res = await gql(app.url, BUMP, { input: { image: IMAGE, dryRun: true } }, bearer(viewer));
    expect(res.errors).toBeUndefined();
    expect(res.data.bumpAgentImage).toMatchObject({ dryRun: true, created: false });
    expect(res.data.bumpAgentImage.plan.length).toBeGreaterThan(0);
    expect(await rollouts()).toBe(before);
    const entries = await app.prisma.auditEntry.findMany({ where: { actor: 'ci-preview' }, orderBy: { id: 'desc' }, take: 1 });
    expect(entries[0]).toMatchObject({ role: 'viewer', result: 'OK', operation: expect.stringContaining('bumpAgentImage') });
    expect(entries[0]!.input).toContain('"dryRun":true');
  });

  it('refuses a viewer every bump that is not a dry run, however it is written, and starts nothing', async () => {
    const before = await rollouts();
    const refused = [
      await gql(app.url, BUMP, { input: { image: IMAGE } }, bearer(viewer)),
      await gql(app.url, BUMP, { input: { image: IMAGE, dryRun: false } }, bearer(viewer)),
      // One dry and one real occurrence of the same field in one operation.
      await gql(
        app.url,
        `mutation { a: bumpAgentImage(input: { image: "${IMAGE}", dryRun: true }) { dryRun } b: bumpAgentImage(input: { image: "${IMAGE}" }) { dryRun } }`,
        {},
        bearer(viewer),
      ),
      // A dry run beside another mutation a viewer may not run.
      await gql(
        app.url,
        `mutation { bumpAgentImage(input: { image: "${IMAGE}", dryRun: true }) { dryRun } pauseRollout(id: "ro_x") { state } }`,
        {},
        bearer(viewer),
      ),
      // The flag in a variable decides as the literal would.
      await gql(
        app.url,
        'mutation($dry: Boolean) { bumpAgentImage(input: { image: "rancher/harvester-vm-dhcp-agent:v0.3.9", dryRun: $dry }) { dryRun } }',
        { dry: false },
        bearer(viewer),
      ),
    ];
    for (const res of refused) expect(res.errors?.[0]?.extensions?.code, JSON.stringify(res.errors)).toBe('FORBIDDEN');
    expect(await rollouts()).toBe(before);

    const viaVariable = await gql(
      app.url,
      'mutation($dry: Boolean) { bumpAgentImage(input: { image: "rancher/harvester-vm-dhcp-agent:v0.3.9", dryRun: $dry }) { dryRun } }',
      { dry: true },
      bearer(viewer),
    );
    expect(viaVariable.errors).toBeUndefined();
  });
});
