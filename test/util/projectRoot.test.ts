import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectPath, projectRoot } from '../../src/util/projectRoot.js';

describe('projectRoot', () => {
  it('is the folder of rollplane’s package.json, found from the module wherever it runs', () => {
    expect(projectRoot()).toBe(path.resolve(import.meta.dirname, '../..'));
    expect(JSON.parse(readFileSync(projectPath('package.json'), 'utf8')).name).toBe('rollplane');
  });

  it('is the one walk up to it in src: no other module finds the project from its own location', () => {
    const src = path.resolve(import.meta.dirname, '../../src');
    const files = readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((f) => /\.tsx?$/.test(f) && f !== path.join('util', 'projectRoot.ts'));
    const walkers = files.filter((f) => {
      const text = readFileSync(path.join(src, f), 'utf8');
      return /import\.meta\.(url|dirname)/.test(text) && /'\.\.(\/\.\.)*'|package\.json'|schema\.graphql'|'migrations'/.test(text);
    });
    expect(walkers).toEqual([]);
  });
});
