import { cpSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { migrationNames } from '../../src/store/migrate.js';
import { projectRoot } from './child.js';

/**
 * A copy, under `dir`, of a provider's committed migrations before `migration` (`upTo: 'before'`) or up to it
 * (`'this'`; later ones are not a migration test's business): apply the first, seed rows as an older rollplane wrote
 * them, then apply the second.
 */
export function migrationsCopy(dir: string, provider: 'sqlite' | 'postgresql', migration: string, upTo: 'before' | 'this'): string {
  const from = path.join(projectRoot, 'prisma', provider, 'migrations');
  const to = path.join(dir, `${provider}-${upTo}-${Math.random().toString(36).slice(2)}`);
  mkdirSync(to);
  for (const name of migrationNames(from))
    if (name < migration || (upTo === 'this' && name === migration)) cpSync(path.join(from, name), path.join(to, name), { recursive: true });
  return to;
}
