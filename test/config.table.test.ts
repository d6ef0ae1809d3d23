import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONFIG_DEFAULTS, SETTINGS, TABLE } from '../src/config.js';
import { defaultsOf } from '../src/configRows.js';
import { KIND_SETTINGS } from '../src/kinds/settings.js';
import { DEFAULT_PEER_RUNTIME_CLASS } from '../src/kinds/nodeAgent/limits.js';
import { projectRoot } from './helpers/child.js';

const README = path.join(projectRoot, 'README.md');
const BEGIN = '<!-- generated from src/config.ts by test/config.table.test.ts (npm run docs:config): begin -->';
const END = '<!-- generated from src/config.ts by test/config.table.test.ts (npm run docs:config): end -->';

/** README's configuration table, from the rows. */
function settingsTable(): string {
  const cell = (text: string) => text.replaceAll('|', '\\|');
  return [
    '| variable | flag | default | meaning | configures |',
    '|---|---|---|---|---|',
    ...SETTINGS.map((s) => `| \`${s.env}\` | \`${s.flag}\` | ${cell(s.default)} | ${cell(s.description)} | \`${s.module}\` |`),
  ].join('\n');
}

/**
 * Not rollplane's server settings, so not checked: the simulator plays the upstream controllers and charts, whose
 * defaults rollplane's match on purpose (their namespace, their agent's ServiceAccount), and the CLI is a client with
 * settings of its own (its --follow poll interval).
 */
const NOT_SERVER_SETTINGS = [path.join('src', 'sim') + path.sep, path.join('src', 'cli') + path.sep];
/**
 * The one default a contract must hold too: the bump's peer runtime class is the server's default (a bump naming it
 * names no class of its own), and src/kinds/nodeAgent/limits.ts imports only the shared limits (the CLI loads it), so it cannot read
 * the table. The test below checks that the two are the same value.
 */
const CONTRACT_COPIES = [{ file: path.join('src', 'kinds', 'nodeAgent', 'limits.ts'), value: 'kata-remote' }];
/** Same field name, another setting: `key` in `file` is not the row's. */
const HOMONYMS = [
  { file: path.join('src', 'controller', 'rateLimiters.ts'), key: 'burst', why: "a controller's per-item retry bucket, not ROLLPLANE_KUBE_BURST" },
];

/** The table's files: src/config.ts and each rollout kind's rows (src/kinds/<kind>/settings.ts, ADR 0051). */
function tableFiles(): string[] {
  const kinds = path.join('src', 'kinds');
  return [
    path.join('src', 'config.ts'),
    ...readdirSync(path.join(projectRoot, kinds), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => path.join(kinds, e.name, 'settings.ts')),
  ];
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) return name === 'generated' || name === 'client' ? [] : sourceFiles(file);
    return file.endsWith('.ts') ? [file] : [];
  });
}

/** Every row's default text. */
function fallbacks(node: object = TABLE): string[] {
  return Object.values(node).flatMap((child) =>
    'parse' in child ? (child.fallback === undefined ? [] : [child.fallback as string]) : fallbacks(child as object),
  );
}

/** A literal written as a fallback: `x ?? 16`, `x === undefined ? 120 : x`, `x ?? 10 * 60_000`, `x ?? 'auto'`. */
const FALLBACK = /\b(\w+)\s*(?:\?\?|\|\||===\s*undefined\s*\?)\s*('[^']*'|[\d_]+(?:\s*\*\s*[\d_]+)*)/g;
/** A literal named as a default: `DEFAULT_COMPILE_AFTER = 2` is compileAfter's. */
const NAMED_DEFAULT = /\bDEFAULT_([A-Z_]+)(?::\s*\w+)?\s*=\s*('[^']*'|[\d_]+(?:\s*\*\s*[\d_]+)*)/g;
const camel = (snake: string) => snake.toLowerCase().replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

function literalValue(text: string): string | number {
  if (text.startsWith("'")) return text.slice(1, -1);
  return text.split('*').reduce((product, factor) => product * Number(factor.trim().replaceAll('_', '')), 1);
}

/** Rows' parsed defaults by field name (readyTimeoutMs: 600000, not the 600 seconds the variable says). */
function parsedDefaults(node: object = TABLE, values: object = CONFIG_DEFAULTS): Map<string, unknown[]> {
  const out = new Map<string, unknown[]>();
  for (const [key, child] of Object.entries(node)) {
    const value = (values as Record<string, unknown>)[key];
    if ('parse' in child) out.set(key, [...(out.get(key) ?? []), value]);
    else for (const [k, v] of parsedDefaults(child as object, (value ?? {}) as object)) out.set(k, [...(out.get(k) ?? []), ...v]);
  }
  return out;
}

describe('the configuration table', () => {
  it("generates README's configuration table (npm run docs:config)", () => {
    const readme = readFileSync(README, 'utf8');
    const start = readme.indexOf(BEGIN);
    const end = readme.indexOf(END);
    expect(start, 'the generated section of README.md').toBeGreaterThanOrEqual(0);
    const table = settingsTable();
    const current = readme.slice(start + BEGIN.length, end).trim();
    if (current !== table && process.env.ROLLPLANE_UPDATE_DOCS === '1') {
      writeFileSync(README, `${readme.slice(0, start + BEGIN.length)}\n${table}\n${readme.slice(end)}`);
      return;
    }
    expect(current, 'README.md is stale: run npm run docs:config').toBe(table);
  });

  it('names each setting once, with a flag derived from its variable', () => {
    expect(new Set(SETTINGS.map((s) => s.env)).size).toBe(SETTINGS.length);
    for (const s of SETTINGS)
      expect(s.flag).toBe(
        `--${s.env
          .replace(/^ROLLPLANE_/, '')
          .toLowerCase()
          .replaceAll('_', '-')}`,
      );
  });

  it('writes no default twice: nothing in src falls back to a literal that is a setting’s default', () => {
    const defaults = parsedDefaults();
    const table = tableFiles();
    const config = table.map((file) => readFileSync(path.join(projectRoot, file), 'utf8')).join('\n');
    // Distinctive texts (an image, a namespace, a Deployment): assigned or returned nowhere else. A row may take its
    // default from the module that owns it (the peer runtime class is the bump's default too): then from there only.
    const distinctive = fallbacks().filter((v) => /[/:.-]/.test(v) && v.length >= 5);
    const found: string[] = [];
    const places = new Map<string, string[]>();
    for (const file of sourceFiles(path.join(projectRoot, 'src'))) {
      const relative = path.relative(projectRoot, file);
      if (table.includes(relative) || NOT_SERVER_SETTINGS.some((dir) => relative.startsWith(dir))) continue;
      const text = readFileSync(file, 'utf8');
      const where = (index: number) => `${relative}:${text.slice(0, index).split('\n').length}`;
      for (const match of text.matchAll(FALLBACK)) {
        const [, key, literal] = match;
        if (HOMONYMS.some((h) => h.file === relative && h.key === key)) continue;
        if ((defaults.get(key!) ?? []).includes(literalValue(literal!))) found.push(`${where(match.index)}: ${match[0]}`);
      }
      for (const match of text.matchAll(NAMED_DEFAULT)) {
        const [, name, literal] = match;
        const value = literalValue(literal!);
        if (CONTRACT_COPIES.some((c) => c.file === relative && c.value === value)) continue;
        if ((defaults.get(camel(name!)) ?? []).includes(value)) found.push(`${where(match.index)}: ${match[0]}`);
      }
      for (const value of distinctive) {
        const quoted = value.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
        for (const match of text.matchAll(new RegExp(`(?:(?<![=!<>])=(?!=)|\\?\\?|\\|\\||return)\\s*['"\`]${quoted}['"\`]`, 'g'))) {
          places.set(value, [...(places.get(value) ?? []), `${where(match.index)}: ${match[0]}`]);
        }
      }
    }
    for (const [value, at] of places) {
      const copies = at.filter((place) => !CONTRACT_COPIES.some((c) => c.value === value && place.startsWith(`${c.file}:`)));
      if (config.includes(`'${value}'`) ? copies.length > 0 : at.length > 1) found.push(...copies);
    }
    expect(DEFAULT_PEER_RUNTIME_CLASS).toBe(CONFIG_DEFAULTS.nodeAgents.peerRuntimeClass);
    expect(found, 'read these from CONFIG_DEFAULTS (src/config.ts) or a kind’s own defaults (its settings.ts) instead').toEqual([]);
  });

  it('gives each kind’s controllers the defaults the configuration has (their settings rows, read once)', () => {
    for (const [key, rows] of Object.entries(KIND_SETTINGS)) {
      expect(defaultsOf(rows), key).toEqual(CONFIG_DEFAULTS[key as keyof typeof KIND_SETTINGS]);
      expect(Object.keys(TABLE)).toContain(key);
    }
  });

  it('sees a default written twice (a broken scan would pass everything)', () => {
    const sample = 'const workers = options.workers ?? 16;\nconst grace = options.stuckGraceSeconds === undefined ? 120 : options.stuckGraceSeconds;';
    const hits = [...sample.matchAll(FALLBACK)].map((m) => [m[1], literalValue(m[2]!)]);
    expect(hits).toEqual([
      ['workers', 16],
      ['stuckGraceSeconds', 120],
    ]);
    expect(parsedDefaults().get('workers')).toContain(64);
    expect(parsedDefaults().get('readyTimeoutMs')).toEqual([600_000]);
    expect([...'export const DEFAULT_COMPILE_AFTER = 2;'.matchAll(NAMED_DEFAULT)].map((m) => [camel(m[1]!), literalValue(m[2]!)])).toEqual([
      ['compileAfter', 2],
    ]);
  });
});
