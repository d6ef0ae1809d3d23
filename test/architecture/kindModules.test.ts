import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  cliPartViolations,
  controllerGraphqlCrossings,
  domainHalfViolations,
  filesNamingKinds,
  KIND_IMPORT_DEBTS,
  KIND_NAME_DEBTS,
  KIND_NAMES_UNCHECKED,
  kindBoundaryViolations,
  kindFolders,
  settingsPartViolations,
  unregisteredKinds,
} from './kindBoundaries.js';

const SRC = path.resolve(import.meta.dirname, '../../src');

describe('rollout kinds as modules (ADRs 0041, 0045)', () => {
  it('finds the kinds it checks', () => {
    expect(kindFolders(SRC).length).toBeGreaterThanOrEqual(3);
  });

  it('lets no file outside a kind’s folder import from inside it (the registry only its module.ts)', () => {
    expect(kindBoundaryViolations(SRC, KIND_IMPORT_DEBTS)).toEqual([]);
  });

  it('lists only import debts that still exist (remove an entry once its part moved into the kind)', () => {
    const all = kindBoundaryViolations(SRC);
    expect(KIND_IMPORT_DEBTS.filter((d) => !all.includes(d))).toEqual([]);
  });

  it('names a kind nowhere outside its folder but in the listed files (ADR 0051: reach it through a port it contributes)', () => {
    const debts = Object.keys(KIND_NAME_DEBTS);
    expect(filesNamingKinds(SRC, KIND_NAMES_UNCHECKED).filter((file) => !debts.includes(file))).toEqual([]);
  });

  it('lists only files that still name a kind (remove an entry once its file names none)', () => {
    const naming = filesNamingKinds(SRC, KIND_NAMES_UNCHECKED);
    expect(Object.keys(KIND_NAME_DEBTS).filter((file) => !naming.includes(file))).toEqual([]);
  });

  it('registers every kind folder in the list of kinds', () => {
    expect(unregisteredKinds(SRC)).toEqual([]);
  });

  it('builds each kind’s domain half (contract, limits, planner) on the domain alone', () => {
    expect(domainHalfViolations(SRC)).toEqual([]);
  });

  it('lets a kind’s CLI part import only the CLI, util, errors and the contracts’ numbers (the CLI loads no server code)', () => {
    expect(cliPartViolations(SRC)).toEqual([]);
  });

  it('lets a kind’s settings rows import only the rows’ helpers, util and errors (config loads no controller)', () => {
    expect(settingsPartViolations(SRC)).toEqual([]);
  });

  it('keeps each kind’s controllers and its GraphQL part apart (its module.ts wires them)', () => {
    expect(controllerGraphqlCrossings(SRC)).toEqual([]);
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
    write(
      'kinds/alpha/plan.ts',
      "import { z } from 'zod';\nimport { y } from './contract.js';\nimport type { D } from '../../domain/Domain.js';\nimport { c } from './controller/index.js';\nimport { g } from '../../graphql/context.js';\n",
    );
    write('kinds/cli.ts', "import { a } from './alpha/cli.js';\n");
    write('kinds/ui.ts', "import { a } from './alpha/ui/index.js';\n");
    write('kinds/settings.ts', "import { a } from './alpha/settings.js';\n");
    write(
      'kinds/alpha/settings.ts',
      "import { row } from '../../configRows.js';\nimport { p } from '../../configParsers.js';\nimport { l } from './limits.js';\nimport { c } from '../../config.js';\nimport { r } from './controller/index.js';\n",
    );
    write('kinds/alpha/cli.ts', "import { f } from '../../cli/flags.js';\nimport { l } from './limits.js';\nimport { p } from './plan.js';\n");
    write('kinds/alpha/contract.ts', "import { e } from '../../errors.js';\nimport { u } from '../../util/dnsNames.js';\n");
    write(
      'kinds/alpha/controller/index.ts',
      "import { p } from '../plan.js';\nimport { h } from '../../../controllers/kindHost.js';\nimport { c } from '../../../graphql/resolvers/connection.js';\n",
    );
    write(
      'kinds/alpha/graphql.ts',
      "import { p } from './plan.js';\nimport { c } from '../../graphql/resolvers/connection.js';\nimport { q } from './controller/queries.js';\n",
    );

    it('reports imports into a kind from the rest of src, from another kind and from the registry past module.ts', () => {
      expect(kindBoundaryViolations(root)).toEqual([
        'graphql/resolver.ts → kinds/alpha/inner.ts',
        'kinds/beta/module.ts → kinds/alpha/inner.ts',
        'kinds/index.ts → kinds/alpha/inner.ts',
      ]);
    });

    it('reports a kind’s domain half importing its controllers or anything but the domain, util and errors', () => {
      expect(domainHalfViolations(root)).toEqual(['kinds/alpha/plan.ts → graphql/context.ts', 'kinds/alpha/plan.ts → kinds/alpha/controller/index.ts']);
    });

    it('reports a kind’s controllers importing GraphQL, and its GraphQL part importing its controllers', () => {
      expect(controllerGraphqlCrossings(root)).toEqual([
        'kinds/alpha/controller/index.ts → graphql/resolvers/connection.ts',
        'kinds/alpha/graphql.ts → kinds/alpha/controller/queries.ts',
      ]);
    });

    it('reports a kind’s CLI part importing more than the CLI and the contract’s numbers', () => {
      expect(cliPartViolations(root)).toEqual(['kinds/alpha/cli.ts → kinds/alpha/plan.ts']);
    });

    it('reports a kind’s settings rows importing more than the rows’ helpers (the configuration, its controllers, its domain half)', () => {
      expect(settingsPartViolations(root)).toEqual([
        'kinds/alpha/settings.ts → config.ts',
        'kinds/alpha/settings.ts → kinds/alpha/controller/index.ts',
        'kinds/alpha/settings.ts → kinds/alpha/limits.ts',
      ]);
    });

    it('reports files outside the kinds’ folders that name a kind, in any spelling, but in the folders it skips', () => {
      write('graphql/text.md', 'Alpha only.\n');
      write('domain/fleet.ts', "export const KINDS = ['BETA'];\n");
      write('sim/beta.ts', 'export const beta = 1;\n');
      expect(filesNamingKinds(root, ['sim'])).toEqual([
        'domain/fleet.ts',
        'graphql/resolver.ts',
        'graphql/text.md',
        'kinds/cli.ts',
        'kinds/index.ts',
        'kinds/settings.ts',
        'kinds/ui.ts',
      ]);
    });

    it('reports a kind folder a registry does not list', () => {
      expect(unregisteredKinds(root)).toEqual([
        'kinds/index.ts: kinds/beta',
        'kinds/cli.ts: kinds/beta',
        'kinds/ui.ts: kinds/beta',
        'kinds/settings.ts: kinds/beta',
      ]);
    });
  });
});
