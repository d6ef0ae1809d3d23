// Builds the UI into dist/ui atomically: Vite writes to a fresh folder that then replaces dist/ui by rename, so a
// running server (or a concurrent test) never sees a half-emptied dist/ui.
import { existsSync, renameSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';

const here = (relative) => fileURLToPath(new URL(relative, import.meta.url));
const target = here('../../../dist/ui');
const next = `${target}.next-${process.pid}`;
const old = `${target}.old-${process.pid}`;

await build({ configFile: here('vite.config.ts'), build: { outDir: next, emptyOutDir: true } });
if (existsSync(target)) renameSync(target, old);
renameSync(next, target);
rmSync(old, { recursive: true, force: true });
