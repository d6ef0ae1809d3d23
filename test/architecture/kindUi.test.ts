import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { kindUiImportViolations, serverImportsOfKindUi } from './kindUiBoundaries.js';

const SRC = path.resolve(import.meta.dirname, '../../src');

describe('the rollout kinds’ views, src/kinds/<kind>/ui (ADR 0052)', () => {
  it('finds the views it checks', () => {
    for (const kind of ['agentPool', 'nodeAgent', 'virtualCluster']) expect(fs.existsSync(path.join(SRC, 'kinds', kind, 'ui', 'index.ts')), kind).toBe(true);
  });

  it('import only the shared UI (and its generated types), their own kind’s views and browser packages: no server code', () => {
    expect(kindUiImportViolations(SRC)).toEqual([]);
  });

  it('are imported by nothing outside the web UI (only the UI’s list of kinds imports them, only its entry point the list)', () => {
    expect(serverImportsOfKindUi(SRC)).toEqual([]);
  });

  describe('on a tree that breaks the rules', () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'kind-ui-boundaries-'));
    afterAll(() => fs.rmSync(root, { recursive: true, force: true }));
    const write = (rel: string, text: string) => {
      fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      fs.writeFileSync(path.join(root, rel), text);
    };
    write('webUi.ts', "import { K } from './kinds/ui.js';\nimport { s } from './ui/client/main.js';\n");
    write('kinds/ui.ts', "import { a } from './alpha/ui/index.js';\nimport type { KindUi } from '../ui/client/kindUi.js';\n");
    write(
      'kinds/alpha/ui/index.ts',
      [
        "import { useState } from 'react';",
        "import type { KindUi } from '../../../ui/client/kindUi.js';",
        "import { Q } from '../../../ui/client/generated/graphql.js';",
        "import { S } from './Section.js';",
        "import { limit } from '../limits.js';",
        "import type { View } from '../plan.js';",
        "import { c } from '../../../graphql/context.js';",
        "import { b } from '../../beta/ui/index.js';",
        "import { readFileSync } from 'node:fs';",
        '',
      ].join('\n'),
    );
    write('kinds/alpha/ui/Section.tsx', "import { Section } from '../../../ui/client/components.js';\n");
    write('kinds/alpha/module.ts', "import { r } from './graphql.js';\nimport { v } from './ui/index.js';\n");
    write('kinds/beta/ui/index.ts', "import type { KindUi } from '../../../ui/client/kindUi.js';\n");
    write('graphql/schema.ts', "import { Q } from '../kinds/alpha/ui/queries.js';\nimport { K } from '../kinds/ui.js';\n");
    write('ui/client/App.tsx', "import { useKinds } from './kindUi.js';\n");

    it('reports a kind’s views importing server code, another kind’s views or a Node built-in', () => {
      expect(kindUiImportViolations(root)).toEqual([
        'kinds/alpha/ui/index.ts → graphql/context.ts',
        'kinds/alpha/ui/index.ts → kinds/alpha/limits.ts',
        'kinds/alpha/ui/index.ts → kinds/alpha/plan.ts',
        'kinds/alpha/ui/index.ts → kinds/beta/ui/index.ts',
        'kinds/alpha/ui/index.ts → node:fs',
      ]);
    });

    it('reports server code importing a kind’s views or the UI’s list of kinds', () => {
      expect(serverImportsOfKindUi(root)).toEqual([
        'graphql/schema.ts → kinds/alpha/ui/queries.ts',
        'graphql/schema.ts → kinds/ui.ts',
        'kinds/alpha/module.ts → kinds/alpha/ui/index.ts',
      ]);
    });
  });
});
