import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { credentialsFile, ensureCredentialsFile } from '../../src/clusters/sources/credentialsFile.js';
import { writeSimulatedMembers } from '../../src/clusters/sources/simulatedMembers.js';

/**
 * The embedded mode's simulated members in the credentials file (docs/adr/0050): written as the file source reads
 * them, marked as the simulator's, rewritten or removed only when so marked; a user's entry of the same name wins.
 */
describe('simulated members in the credentials file', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane simulated members '));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const member = (name: string, port: number) => ({ name, labels: { tier: 'edge' }, kubeconfig: `apiVersion: v1\nkind: Config\n# port ${port}\n` });

  it('adds, rewrites and removes its own entries, keeps a user entry of the same name, and the source reads the result', async () => {
    const file = path.join(dir, 'a', 'member-clusters.yaml');
    await ensureCredentialsFile(file);
    expect(await writeSimulatedMembers(file, [member('edge-1', 1), member('edge-2', 1)])).toEqual({ written: ['edge-1', 'edge-2'], removed: [], skipped: [] });
    // Nothing changed: nothing written.
    const before = statSync(file).ino; // a write renames a new file over it
    expect(await writeSimulatedMembers(file, [member('edge-1', 1), member('edge-2', 1)])).toEqual({ written: [], removed: [], skipped: [] });
    expect(statSync(file).ino).toBe(before);

    // A user adds an entry of their own, named as a simulated one will be.
    const text = readFileSync(file, 'utf8').replace('\nclusters:\n', '\nclusters:\n  - name: edge-3\n    kubeconfig: "mine"\n');
    writeFileSync(file, text);
    expect(await writeSimulatedMembers(file, [member('edge-1', 2), member('edge-3', 2)])).toEqual({
      written: ['edge-1'],
      removed: ['edge-2'],
      skipped: ['edge-3'],
    });
    const found = await credentialsFile(file).read();
    expect(found.map((f) => [f.registration.name, f.registration.labels, f.kubeconfig])).toEqual([
      ['edge-3', {}, 'mine'],
      ['edge-1', { tier: 'edge' }, member('edge-1', 2).kubeconfig],
    ]);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8')).toContain('# rollplane member clusters');

    expect(await writeSimulatedMembers(file, [])).toEqual({ written: [], removed: ['edge-1'], skipped: [] });
    expect((parse(readFileSync(file, 'utf8')) as { clusters: { name: string }[] }).clusters.map((c) => c.name)).toEqual(['edge-3']);
  });

  it('leaves a file it must not trust as it is: readable by others, or not YAML', async () => {
    const open = path.join(dir, 'open.yaml');
    writeFileSync(open, 'clusters: []\n');
    chmodSync(open, 0o644);
    await expect(writeSimulatedMembers(open, [member('edge-1', 1)])).rejects.toMatchObject({ details: { reason: 'FILE_PERMISSIONS' } });
    expect(readFileSync(open, 'utf8')).toBe('clusters: []\n');

    const broken = path.join(dir, 'broken.yaml');
    writeFileSync(broken, 'clusters: [\n', { mode: 0o600 });
    await expect(writeSimulatedMembers(broken, [member('edge-1', 1)])).rejects.toMatchObject({ details: { reason: 'MALFORMED' } });
    expect(readFileSync(broken, 'utf8')).toBe('clusters: [\n');
  });
});
