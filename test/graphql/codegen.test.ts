import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { documentFiles, generate, kindUiDocuments, root, staleFiles } from '../../scripts/codegen.mjs';

// The generated API types are committed; this fails when schema.graphql or a client's documents changed without
// `npm run codegen` (the build regenerates them too, but a stale commit would type-check against the old contract).
describe('generated GraphQL types', () => {
  const scratch = mkdtempSync(path.join(tmpdir(), 'rollplane-codegen-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('match what schema.graphql and the documents generate', async () => {
    const generated = await generate();
    expect([...generated.keys()].sort()).toEqual(['src/cli/generated/graphql.ts', 'src/graphql/generated/resolvers.ts', 'src/ui/client/generated/graphql.ts']);
    for (const [file, text] of generated) {
      expect(readFileSync(path.join(root, file), 'utf8'), `${file} is stale: run npm run codegen`).toBe(text);
    }
  });

  it('notices a schema change that was not regenerated', async () => {
    // A copy of the inputs and outputs, with one field added to the schema and nothing regenerated.
    for (const file of ['schema.graphql', ...documentFiles(), ...(await generate()).keys()]) {
      cpSync(path.join(root, file), path.join(scratch, file), { recursive: true });
    }
    expect(await staleFiles(scratch)).toEqual([]);
    const schema = readFileSync(path.join(scratch, 'schema.graphql'), 'utf8');
    writeFileSync(path.join(scratch, 'schema.graphql'), schema.replace('type ServerInfo {', 'type ServerInfo {\n  uptimeSeconds: Int!'));
    expect(await staleFiles(scratch)).toEqual(['src/graphql/generated/resolvers.ts']);
  });

  it('notices a client document that was not regenerated', async () => {
    const documents = readFileSync(path.join(scratch, 'src/cli/operations.graphql'), 'utf8');
    writeFileSync(
      path.join(scratch, 'src/cli/operations.graphql'),
      documents.replace('query LastEvent { serverInfo { lastEventId } }', 'query LastEvent { serverInfo { lastEventId version } }'),
    );
    expect(await staleFiles(scratch)).toContain('src/cli/generated/graphql.ts');
  });

  it('generates the UI types from each kind’s documents too (src/kinds/<kind>/ui, ADR 0052)', () => {
    expect(kindUiDocuments()).toEqual([
      'src/kinds/agentPool/ui/queries.graphql',
      'src/kinds/nodeAgent/ui/queries.graphql',
      'src/kinds/virtualCluster/ui/queries.graphql',
    ]);
    expect(documentFiles()).toEqual(expect.arrayContaining(kindUiDocuments()));
  });

  it('notices a kind’s UI document that was not regenerated', async () => {
    const file = 'src/kinds/nodeAgent/ui/queries.graphql';
    const documents = readFileSync(path.join(scratch, file), 'utf8');
    writeFileSync(path.join(scratch, file), documents.replace('desiredImage peerRuntimeClass', 'desiredImage'));
    expect(await staleFiles(scratch)).toContain('src/ui/client/generated/graphql.ts');
  });
});
