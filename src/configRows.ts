import type { ReadContext } from './configParsers.js';

/**
 * A row of the configuration table (docs/adr/0037) and what reads rows: a leaf that imports only the parsers' context,
 * so that the rows may live beside the module they configure (a kind's `settings.ts`, ADR 0051) and src/config.ts
 * composes them without a cycle.
 */
export interface Row<T> {
  readonly env: string;
  /** `--` and the variable without `ROLLPLANE_`, in kebab case. */
  readonly flag: string;
  /** The default as the README and `--help` show it. */
  readonly default: string;
  /** The text parsed when the setting is unset; undefined: the parser decides (a default that depends on the host). */
  readonly fallback: string | undefined;
  readonly description: string;
  /** The module the setting configures. */
  readonly module: string;
  readonly parse: (raw: string | undefined, context: ReadContext) => T;
}

type RowInput<T> = { env: string; description: string; module: string } & (
  | { default: string; shown?: string; parse: (raw: string, context: ReadContext) => T }
  | { default?: undefined; shown: string; parse: (raw: string | undefined, context: ReadContext) => T }
);

export function row<T>(input: RowInput<T>): Row<T> {
  return {
    env: input.env,
    flag: `--${input.env
      .replace(/^ROLLPLANE_/, '')
      .toLowerCase()
      .replaceAll('_', '-')}`,
    default: input.shown ?? input.default!,
    fallback: input.default,
    description: input.description,
    module: input.module,
    parse: input.parse as (raw: string | undefined, context: ReadContext) => T,
  };
}

type ValueOf<R> = R extends Row<infer T> ? T : Section<R>;
/** A group of rows; a row that may parse to undefined is an optional field (absent when unset). */
export type Section<R> = { readonly [K in keyof R as undefined extends ValueOf<R[K]> ? never : K]: ValueOf<R[K]> } & {
  readonly [K in keyof R as undefined extends ValueOf<R[K]> ? K : never]?: Exclude<ValueOf<R[K]>, undefined>;
};

export function isRow(value: unknown): value is Row<unknown> {
  return typeof value === 'object' && value !== null && 'parse' in value && 'env' in value;
}

/** The rows of a table or group, in its order. */
export function rowsOf(node: object): Row<unknown>[] {
  return Object.values(node).flatMap((child) => (isRow(child) ? [child] : rowsOf(child as object)));
}

/** What a row's parser is given besides its text and its name: everything in ReadContext but `setting` and `fromFlag`. */
export type ReadBase = Omit<ReadContext, 'setting' | 'fromFlag'>;

/**
 * Parses a table or group: each row its given text (`given`: from a flag or the environment), else its fallback. A row
 * parsing to undefined leaves its field out. The result is deep-frozen.
 */
export function parseRows<R extends object>(
  node: R,
  base: ReadBase,
  given: (row: Row<unknown>) => { text: string | undefined; fromFlag: boolean } = () => ({ text: undefined, fromFlag: false }),
): Section<R> {
  const build = (group: object): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(group)) {
      let value: unknown;
      if (isRow(child)) {
        const { text, fromFlag } = given(child);
        value = child.parse(text ?? child.fallback, { ...base, setting: child.env, fromFlag });
      } else {
        value = build(child as object);
      }
      if (value !== undefined) out[key] = value;
    }
    return out;
  };
  return deepFreeze(build(node)) as Section<R>;
}

/**
 * A group's rows at their defaults, as src/config.ts's CONFIG_DEFAULTS holds them (no file, no terminal): what the
 * module a group configures falls back to when a test leaves an option out. Only for rows whose default depends on no
 * other group's setting (`other` sees the group's own rows).
 */
export function defaultsOf<R extends object>(group: R): Section<R> {
  const byEnv = new Map(rowsOf(group).map((r) => [r.env, r]));
  return parseRows(group, {
    other: (env) => {
      const found = byEnv.get(env);
      if (!found) throw new Error(`defaultsOf: ${env} is not a row of this group`);
      return found.fallback;
    },
    ...NO_HOST,
  });
}

/** The host CONFIG_DEFAULTS assumes: no files, no home directory, no terminal. */
const NO_HOST = {
  fileExists: () => false,
  readFile: (file: string) => {
    throw new Error(`no file ${file} at the defaults`);
  },
  homeDir: '/nonexistent',
  isTty: false,
} satisfies Omit<ReadBase, 'other'>;

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
