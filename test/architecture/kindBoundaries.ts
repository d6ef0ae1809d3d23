import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** Where the rollout kinds' modules live: one folder each under it, registered through its `module.ts`. */
export const KINDS_FOLDER = 'kinds';
/**
 * The files outside the kinds' folders that may name them, each the list of registered kinds for one program and the
 * one file of a kind it imports: the server's (`index.ts`, each kind's `module.ts`), the CLI's (`cli.ts`, each
 * kind's `cli.ts`, so that the CLI loads no server code), the web UI's (`ui.ts`, each kind's `ui/index.ts`, ADR 0052)
 * and the configuration's (`settings.ts`, each kind's `settings.ts`: its rows of the settings table, ADR 0051).
 */
const REGISTRIES = new Map([
  [path.join(KINDS_FOLDER, 'index.ts'), 'module'],
  [path.join(KINDS_FOLDER, 'cli.ts'), 'cli'],
  [path.join(KINDS_FOLDER, 'ui.ts'), path.join('ui', 'index')],
  [path.join(KINDS_FOLDER, 'settings.ts'), 'settings'],
]);

/**
 * Generic code that still imports a kind's part (ADR 0045, what is left), as `importer → imported`: each entry goes
 * when that part moves into the kind's folder and reaches the generic code through a registry. The list only shrinks:
 * a test fails on an entry that no longer exists. Empty since the CLI's bump subcommands moved (src/kinds/<kind>/cli.ts).
 */
export const KIND_IMPORT_DEBTS: readonly string[] = [];

/** The TypeScript sources under `dir`, generated code left out. */
export function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'generated' || entry.name === 'node_modules') continue;
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(p));
    else if (/\.(ts|tsx|mts)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** The kinds' folders under `srcDir` (relative to it, e.g. `kinds/agentPool`). */
export function kindFolders(srcDir: string): string[] {
  return fs
    .readdirSync(path.join(srcDir, KINDS_FOLDER), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => path.join(KINDS_FOLDER, e.name));
}

/**
 * Imports (type-only ones too) that reach into a kind's folder from outside it: from another kind, from the rest of
 * src, or from the registry to anything but the kind's `module.ts`. Each as `importer → imported`, relative to srcDir.
 */
export function kindBoundaryViolations(srcDir: string, debts: readonly string[] = []): string[] {
  const kinds = kindFolders(srcDir);
  const kindOf = (rel: string) => kinds.find((k) => rel.startsWith(k + path.sep));
  const found: string[] = [];
  for (const file of sourceFiles(srcDir)) {
    const from = path.relative(srcDir, file);
    const { importedFiles } = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, false);
    for (const { fileName } of importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const to = path.relative(srcDir, path.resolve(path.dirname(file), fileName.replace(/\.(m?js)$/, '.ts')));
      const kind = kindOf(to);
      if (!kind || kindOf(from) === kind) continue;
      if (REGISTRIES.has(from) && to === path.join(kind, `${REGISTRIES.get(from)}.ts`)) continue;
      if (debts.includes(`${from} → ${to}`)) continue;
      found.push(`${from} → ${to}`);
    }
  }
  return found.sort();
}

/** Kind folders a registry does not register (the server's through their `module.ts`, the CLI's through `cli.ts` …). */
export function unregisteredKinds(srcDir: string): string[] {
  const missing: string[] = [];
  for (const [registry, file] of REGISTRIES) {
    const text = fs.existsSync(path.join(srcDir, registry)) ? fs.readFileSync(path.join(srcDir, registry), 'utf8') : '';
    for (const kind of kindFolders(srcDir)) if (!text.includes(`'./${path.basename(kind)}/${file}.js'`)) missing.push(`${registry}: ${kind}`);
  }
  return missing;
}

/** Each kind's `file` importing a file of src that `allowed` refuses, as `importer → imported` (relative to srcDir). */
function partViolations(srcDir: string, file: string, allowed: (to: string, kind: string) => boolean): string[] {
  const found: string[] = [];
  for (const kind of kindFolders(srcDir)) {
    const from = path.join(kind, file);
    if (!fs.existsSync(path.join(srcDir, from))) continue;
    const { importedFiles } = ts.preProcessFile(fs.readFileSync(path.join(srcDir, from), 'utf8'), true, false);
    for (const { fileName } of importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const to = path.relative(srcDir, path.resolve(path.dirname(path.join(srcDir, from)), fileName.replace(/\.(m?js)$/, '.ts')));
      if (!allowed(to, kind)) found.push(`${from} → ${to}`);
    }
  }
  return found.sort();
}

/** What a kind's `cli.ts` may import (the CLI loads it): the CLI, util, errors, the shared limits and its own. */
export function cliPartViolations(srcDir: string): string[] {
  return partViolations(
    srcDir,
    'cli.ts',
    (to, kind) =>
      ['cli', 'util', 'errors.ts'].includes(to.split(path.sep)[0]!) || to === path.join('domain', 'kinds', 'limits.ts') || to === path.join(kind, 'limits.ts'),
  );
}

/**
 * What a kind's `settings.ts` may import (src/config.ts composes it, and the CLI loads config for `--help`): the rows'
 * helpers and parsers, util and errors. Nothing else of its kind (not even its domain half, which would tie config to
 * the domain in the import graph) and nothing of the configuration, so that config loads no controller.
 */
export function settingsPartViolations(srcDir: string): string[] {
  return partViolations(srcDir, 'settings.ts', (to) => ['configRows.ts', 'configParsers.ts', 'util', 'errors.ts'].includes(to.split(path.sep)[0]!));
}

/**
 * A kind's wiring (ADR 0045): its registration (`module.ts`), its GraphQL part (`graphql.ts`), its CLI part (`cli.ts`),
 * its settings rows (`settings.ts`, ADR 0051) and its subfolders (`controller/`). Every other file directly in a kind's
 * folder is its domain half (contract, limits, planner): what the domain's consumers may use, built on the domain alone.
 */
const WIRING_FILES = new Set(['module.ts', 'graphql.ts', 'cli.ts', 'settings.ts']);
/** What a kind's domain half may import besides its own domain half and npm packages. */
const DOMAIN_HALF_MAY_IMPORT = ['domain', 'util', 'errors.ts'];

/**
 * Imports from a kind's domain half (top-level files but the wiring ones) to anything but the domain, util, the errors
 * and the kind's own domain half: its controllers, another kind, GraphQL, the CLI. Each as `importer → imported`.
 */
export function domainHalfViolations(srcDir: string): string[] {
  const found: string[] = [];
  for (const kind of kindFolders(srcDir)) {
    const dir = path.join(srcDir, kind);
    const isDomainHalf = (rel: string) => path.dirname(rel) === kind && !WIRING_FILES.has(path.basename(rel));
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const from = path.join(kind, entry.name);
      if (!entry.isFile() || !/\.(ts|mts)$/.test(entry.name) || !isDomainHalf(from)) continue;
      const { importedFiles } = ts.preProcessFile(fs.readFileSync(path.join(srcDir, from), 'utf8'), true, false);
      for (const { fileName } of importedFiles) {
        if (!fileName.startsWith('.')) continue;
        const to = path.relative(srcDir, path.resolve(path.dirname(path.join(srcDir, from)), fileName.replace(/\.(m?js)$/, '.ts')));
        if (isDomainHalf(to) || DOMAIN_HALF_MAY_IMPORT.includes(to.split(path.sep)[0]!)) continue;
        found.push(`${from} → ${to}`);
      }
    }
  }
  return found.sort();
}

/**
 * A kind's controllers and its GraphQL part kept apart, as the controllers and GraphQL are (only its `module.ts` wires
 * them): `controller/` imports neither GraphQL nor the kind's `graphql.ts`, which imports neither the controllers'
 * host nor the kind's `controller/`. Each as `importer → imported`.
 */
export function controllerGraphqlCrossings(srcDir: string): string[] {
  const found: string[] = [];
  for (const kind of kindFolders(srcDir)) {
    const controller = path.join(kind, 'controller') + path.sep;
    const graphql = path.join(kind, 'graphql.ts');
    for (const file of sourceFiles(path.join(srcDir, kind))) {
      const from = path.relative(srcDir, file);
      const forbidden =
        from === graphql
          ? (to: string) => to.startsWith(controller) || to.startsWith(`controllers${path.sep}`)
          : from.startsWith(controller)
            ? (to: string) => to === graphql || to.startsWith(`graphql${path.sep}`)
            : undefined;
      if (!forbidden) continue;
      const { importedFiles } = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, false);
      for (const { fileName } of importedFiles) {
        if (!fileName.startsWith('.')) continue;
        const to = path.relative(srcDir, path.resolve(path.dirname(file), fileName.replace(/\.(m?js)$/, '.ts')));
        if (forbidden(to)) found.push(`${from} → ${to}`);
      }
    }
  }
  return found.sort();
}

/**
 * How a kind's folder name is spelled in code and text: its words in any case, joined directly or by `_` (`agentPool`,
 * `AGENT_POOL`, `AgentPoolView`, `NodeAgentReplaced`), the grep of ADR 0045's measure (`agent_?pool` …).
 */
export function kindNamePattern(srcDir: string): RegExp {
  const words = kindFolders(srcDir).map((kind) =>
    path
      .basename(kind)
      .split(/(?=[A-Z])/)
      .map((word) => word.toLowerCase())
      .join('_?'),
  );
  return new RegExp(words.join('|'), 'i');
}

/**
 * Files under `srcDir` outside the kinds' folders that name a kind (any file: code, SDL documents, READMEs), relative
 * to it, but those under `skipped` (folders, relative to `srcDir`) and generated code.
 */
export function filesNamingKinds(srcDir: string, skipped: readonly string[]): string[] {
  const pattern = kindNamePattern(srcDir);
  const kinds = kindFolders(srcDir);
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name);
      const rel = path.relative(srcDir, p);
      if (entry.isDirectory()) {
        if (entry.name !== 'generated' && !kinds.includes(rel) && !skipped.includes(rel)) walk(p);
      } else if (pattern.test(fs.readFileSync(p, 'utf8'))) {
        found.push(rel);
      }
    }
  };
  walk(srcDir);
  return found.sort();
}

/**
 * Where the kinds' names are not checked: the simulator plays the upstream controllers and clusters (it is what a kind
 * talks to, not rollplane's code).
 */
export const KIND_NAMES_UNCHECKED = ['sim'];

/**
 * The files outside the kinds' folders that still name a kind (ADRs 0045, 0051), each with why. The list only shrinks:
 * a new file naming a kind fails the test (reach the kind through a port it contributes instead), and so does an entry
 * whose file no longer names one (remove it).
 */
export const KIND_NAME_DEBTS: Readonly<Record<string, string>> = {
  'kinds/index.ts': 'the server’s list of kinds',
  'kinds/cli.ts': 'the CLI’s list of kinds',
  'kinds/ui.ts': 'the web UI’s list of kinds',
  'kinds/settings.ts': 'the configuration’s list of kinds (their settings rows)',
  'domain/events.ts': 'data: the schema’s RolloutKind and EventType enums (the store and the API share them)',
  'domain/eventPayloads.ts': 'comment: why routing does not read a cluster upgrade’s `cluster` as a member cluster',
  'domain/clusters/model.ts': 'comment: a member cluster is not the VirtualCluster a kind upgrades',
  'config.ts': 'doc: ROLLPLANE_RESPONSE_CACHE_MB’s description (README, --help) names the root fields the cache serves',
  'controllers/host.ts': 'comment: the events the kinds append',
  'controllers/README.md': 'docs: the kinds’ controllers as examples',
  'graphql/queryLimits.ts': 'comment: an example schema coordinate',
  'util/goFlags.ts': 'comment: where upstream registers the flag',
};
