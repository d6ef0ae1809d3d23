/**
 * Command-line flags as Go programs read them: the standard `flag` package (golang/go `src/flag/flag.go`) and
 * component-base's `MapStringBool` (kubernetes `staging/src/k8s.io/component-base/cli/flag/map_string_bool.go`),
 * which the CAPN vc-manager registers as `--feature-gates` (virtualcluster/cmd/manager/main.go). Shared by rollplane
 * (reading an upstream Deployment's args) and the simulator (running that Deployment), so that both read one flag the
 * same way.
 */

/** How a flag takes its value: a bool flag needs none (`-x`, `-x=false`); any other flag takes `-x=v` or `-x v`. */
export type GoFlagKind = 'bool' | 'value';

export interface GoFlagSet {
  /** Known flags by name (without dashes). */
  flags: Readonly<Record<string, GoFlagKind>>;
  /**
   * How an undefined flag is read. `error` is Go's `flag.Parse`: "flag provided but not defined" (the program exits);
   * `lenient` reads `-x=v` as one flag and `-x v` as a flag with a value, for a reader that knows only some flags.
   */
  unknown: 'error' | 'lenient';
}

export interface ParsedGoFlags {
  /** Every occurrence of each flag, in order (Go calls the flag's `Set` once per occurrence). */
  values: Map<string, string[]>;
  /** Arguments after the flags (the first non-flag argument or `--` ends them). */
  rest: string[];
}

/**
 * `FlagSet.Parse`: flags start with `-` or `--`; `--` alone ends them, as does the first argument that is not a flag
 * (`-` alone included). Returns an Error with Go's message where Go's parse fails.
 */
export function parseGoFlags(args: readonly string[], set: GoFlagSet): ParsedGoFlags | Error {
  const values = new Map<string, string[]>();
  const add = (name: string, value: string) => values.set(name, [...(values.get(name) ?? []), value]);
  let i = 0;
  for (; i < args.length; i++) {
    const arg = args[i]!;
    if (arg.length < 2 || arg[0] !== '-') break;
    let dashes = 1;
    if (arg[1] === '-') {
      dashes = 2;
      if (arg.length === 2) {
        i++;
        break;
      }
    }
    let name = arg.slice(dashes);
    if (name.length === 0 || name[0] === '-' || name[0] === '=') return new Error(`bad flag syntax: ${arg}`);
    let value: string | undefined;
    const eq = name.indexOf('=');
    if (eq >= 0) {
      value = name.slice(eq + 1);
      name = name.slice(0, eq);
    }
    const kind = set.flags[name] ?? (set.unknown === 'lenient' ? 'value' : undefined);
    if (kind === undefined) return new Error(`flag provided but not defined: -${name}`);
    if (kind === 'bool') {
      if (value === undefined) value = 'true';
      else if (parseGoBool(value) === undefined) return new Error(`invalid boolean value "${value}" for -${name}: parse error`);
    } else if (value === undefined) {
      if (i + 1 >= args.length) return new Error(`flag needs an argument: -${name}`);
      value = args[++i]!;
    }
    add(name, value);
  }
  return { values, rest: args.slice(i) };
}

/** `strconv.ParseBool`: 1, t, T, TRUE, true, True, 0, f, F, FALSE, false, False; undefined for anything else. */
export function parseGoBool(text: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(text)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(text)) return false;
  return undefined;
}

/**
 * component-base `MapStringBool.Set`, once per occurrence of the flag: every occurrence adds to one map (a later pair
 * for the same key wins); each value is `k=v` pairs separated by commas, empty items skipped, key and value trimmed,
 * the value parsed by `strconv.ParseBool`. An Error carries the message the flag package prints.
 */
export function mapStringBool(occurrences: readonly string[], flag = 'feature-gates'): Map<string, boolean> | Error {
  const map = new Map<string, boolean>();
  for (const occurrence of occurrences) {
    for (const item of occurrence.split(',')) {
      if (item.length === 0) continue;
      const eq = item.indexOf('=');
      if (eq < 0) return new Error(`invalid argument "${occurrence}" for "--${flag}" flag: malformed pair, expect string=bool`);
      const key = item.slice(0, eq).trim();
      const raw = item.slice(eq + 1).trim();
      const value = parseGoBool(raw);
      if (value === undefined) {
        return new Error(
          `invalid argument "${occurrence}" for "--${flag}" flag: invalid value of ${key}: ${raw}, err: strconv.ParseBool: parsing "${raw}": invalid syntax`,
        );
      }
      map.set(key, value);
    }
  }
  return map;
}
