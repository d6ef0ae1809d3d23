// Builds the UI into dist/ui atomically: Vite writes to a fresh folder that then replaces dist/ui by rename, so a
// running server (or a concurrent test) never sees a half-emptied dist/ui. Two builds racing each retry the swap.
import { existsSync, renameSync, rmSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';

const here = (relative) => fileURLToPath(new URL(relative, import.meta.url));
const target = here('../../../dist/ui');
const next = `${target}.next-${process.pid}`;

await build({ configFile: here('vite.config.ts'), build: { outDir: next, emptyOutDir: true } });
for (let attempt = 0; ; attempt++) {
  const old = `${target}.old-${process.pid}-${attempt}`;
  try {
    if (existsSync(target)) renameSync(target, old);
    renameSync(next, target);
    for (let i = 0; i <= attempt; i++) rmSync(`${target}.old-${process.pid}-${i}`, { recursive: true, force: true });
    break;
  } catch (error) {
    if (attempt >= 10) throw error;
    await sleep(50 + Math.random() * 100);
  }
}
