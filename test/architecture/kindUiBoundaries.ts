import fs from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import ts from 'typescript';
import { KINDS_FOLDER, kindFolders, sourceFiles } from './kindBoundaries.js';

/**
 * The web UI's program (ADR 0052), relative to src: the shared UI, its entry point, the UI's list of kinds and each
 * kind's views. It is bundled for the browser apart from the server (src/ui/client/tsconfig.json, vite.config.ts).
 */
const SHARED_UI = path.join('ui', 'client') + path.sep;
const UI_ENTRY = 'webUi.ts';
const UI_KIND_LIST = path.join(KINDS_FOLDER, 'ui.ts');

/** The `ui/` folder of the kind `rel` belongs to (e.g. `kinds/agentPool/ui/`), if `rel` is one of a kind's views. */
function kindUiOf(srcDir: string, rel: string): string | undefined {
  return kindFolders(srcDir)
    .map((kind) => path.join(kind, 'ui') + path.sep)
    .find((ui) => rel.startsWith(ui));
}

/** Each import of each source file under srcDir: `to` relative to srcDir for relative imports, else the package name. */
function imports(srcDir: string): { from: string; to: string; relative: boolean }[] {
  const found: { from: string; to: string; relative: boolean }[] = [];
  for (const file of sourceFiles(srcDir)) {
    const from = path.relative(srcDir, file);
    const { importedFiles } = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, false);
    for (const { fileName } of importedFiles) {
      if (!fileName.startsWith('.')) {
        found.push({ from, to: fileName, relative: false });
        continue;
      }
      // `.js` specifiers name `.ts` or `.tsx` sources; the folder is what the rules look at, the file name is for the message.
      found.push({ from, to: path.relative(srcDir, path.resolve(path.dirname(file), fileName.replace(/\.(m?js)$/, '.ts'))), relative: true });
    }
  }
  return found;
}

const isBuiltin = (specifier: string) => specifier.startsWith('node:') || builtinModules.includes(specifier.split('/')[0]!);

/**
 * What a kind's views (src/kinds/<kind>/ui) import besides the shared UI (src/ui/client, its generated types included),
 * their own kind's views and browser packages: server code (the kind's own contract, controllers or GraphQL part, the
 * domain, …), another kind's views, the UI's entry point or list of kinds, or a Node built-in. Each as
 * `importer → imported`.
 */
export function kindUiImportViolations(srcDir: string): string[] {
  const found: string[] = [];
  for (const { from, to, relative } of imports(srcDir)) {
    const own = kindUiOf(srcDir, from);
    if (!own) continue;
    const allowed = relative ? to.startsWith(SHARED_UI) || to.startsWith(own) : !isBuiltin(to);
    if (!allowed) found.push(`${from} → ${to}`);
  }
  return found.sort();
}

/**
 * Imports of the web UI's own files (a kind's views, the UI's list of kinds, its entry point) from anything outside
 * the UI's program: the server, the CLI, a kind's server half (its `module.ts`, `graphql.ts`, `controller/`). Only the
 * UI's list imports a kind's views, and only the entry point imports the list. Each as `importer → imported`.
 */
export function serverImportsOfKindUi(srcDir: string): string[] {
  const inUi = (rel: string) => rel.startsWith(SHARED_UI) || rel === UI_ENTRY || rel === UI_KIND_LIST || kindUiOf(srcDir, rel) !== undefined;
  const found: string[] = [];
  for (const { from, to, relative } of imports(srcDir)) {
    if (!relative || inUi(from)) continue;
    if (kindUiOf(srcDir, to) || to === UI_KIND_LIST || to === UI_ENTRY) found.push(`${from} → ${to}`);
  }
  return found.sort();
}
