import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { kindBoundaryViolations, kindFolders, unregisteredKinds } from './kindBoundaries.js';

const SRC = path.resolve(import.meta.dirname, '../../src');

describe('rollout kinds as modules (ADR 0041)', () => {
  it('finds the kinds it checks', () => {
    expect(kindFolders(SRC).length).toBeGreaterThanOrEqual(3);
  });

  it('lets no file outside a kind’s folder import from inside it (the registry only its module.ts)', () => {
    expect(kindBoundaryViolations(SRC)).toEqual([]);
  });

  it('registers every kind folder in the list of kinds', () => {
    expect(unregisteredKinds(SRC)).toEqual([]);
  });

  describe('on a tree that breaks the rule', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'kind-boundaries-'));
    afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
    const write = (rel: string, text: string) => {
      fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      fs.writeFileSync(path.join(root, rel), text);
    };
    write('kinds/index.ts', "import { a } from './alpha/module.js';\nimport { x } from './alpha/inner.js';\n");
    write('kinds/alpha/module.ts', "import { x } from './inner.js';\n");
    write('kinds/alpha/inner.ts', 'export const x = 1;\n');
    write('kinds/beta/module.ts', "import type { X } from '../alpha/inner.js';\n");
    write('graphql/resolver.ts', "import { x } from '../kinds/alpha/inner.js';\n");

    it('reports imports into a kind from the rest of src, from another kind and from the registry past module.ts', () => {
      expect(kindBoundaryViolations(root)).toEqual([
        'graphql/resolver.ts → kinds/alpha/inner.ts',
        'kinds/beta/module.ts → kinds/alpha/inner.ts',
        'kinds/index.ts → kinds/alpha/inner.ts',
      ]);
    });

    it('reports a kind folder the registry does not list', () => {
      expect(unregisteredKinds(root)).toEqual(['kinds/beta']);
    });
  });
});
