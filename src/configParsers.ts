import { isIP } from 'node:net';
import path from 'node:path';
import { AppError, ErrorCode } from './errors.js';
// A leaf module (no simulator code): only the names of the upstream behaviours, for validation.
import { parseUpstreamSpec, UPSTREAM_TOKENS } from './sim/behaviour/upstream/selection.js';
import { DatabaseUrlError, parseDatabaseUrl } from './util/databaseUrl.js';
import { isDns1123Label, isDns1123Subdomain, namesProblem, parseNamespacedName } from './util/dnsNames.js';
import { parseImageReference } from './util/imageReference.js';

/** The parsers the rows of the configuration table (src/config.ts) share: each names its setting in its errors. */

export type KubeMode = 'sim' | 'kubeconfig' | 'in-cluster';

/** 127.0.0.0/8, ::1 and localhost: the addresses on which authentication may be off. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

export class ConfigError extends AppError {
  constructor(setting: string, reason: string) {
    super(ErrorCode.BadUserInput, `invalid configuration: ${setting}: ${reason}`, { details: { setting } });
  }
}

/** What a row's parser sees besides its own text. */
export interface ReadContext {
  /** The row's variable, which every error names. */
  readonly setting: string;
  /** The value came from a command-line flag (visible in `ps`). */
  readonly fromFlag: boolean;
  /** Another setting's text, its default applied (settings whose meaning depends on another, such as ROLLPLANE_AUTH on HOST). */
  other(env: string): string | undefined;
  readonly fileExists: (file: string) => boolean;
  readonly readFile: (file: string) => string;
  readonly homeDir: string;
  readonly isTty: boolean;
}

export const integer =
  (min: number, max: number, scale = 1) =>
  (raw: string, { setting }: ReadContext): number => {
    if (!/^-?\d+$/.test(raw.trim())) throw new ConfigError(setting, `must be an integer between ${min} and ${max} (got "${raw}")`);
    const value = Number(raw);
    if (value < min || value > max) throw new ConfigError(setting, `must be between ${min} and ${max} (got ${value})`);
    return value * scale;
  };

/** An integer, or `off` for none (null). */
export const integerOrOff =
  (min: number, max: number) =>
  (raw: string, context: ReadContext): number | null =>
    raw === 'off' ? null : integer(min, max)(raw, context);

export const oneOf =
  <T extends string>(...allowed: T[]) =>
  (raw: string, { setting }: ReadContext): T => {
    if (!(allowed as string[]).includes(raw)) throw new ConfigError(setting, `must be one of ${allowed.join(', ')} (got "${raw}")`);
    return raw as T;
  };

export const flag = (raw: string, context: ReadContext): boolean => oneOf('true', 'false')(raw, context) === 'true';
export const optionalText = (raw: string | undefined): string | undefined => raw;

/** `raw` checked by one of dnsNames' formats; ConfigError with Kubernetes' words for what is wrong with it. */
const dnsName =
  (check: (value: string) => readonly string[], format: 'label' | 'subdomain') =>
  (raw: string, { setting }: ReadContext): string => {
    const problem = namesProblem(check(raw));
    if (problem) throw new ConfigError(setting, `must be a DNS-1123 ${format} (got "${raw.slice(0, 80)}"): ${problem}`);
    return raw;
  };
export const dns1123Label = dnsName(isDns1123Label, 'label');
export const dns1123Subdomain = dnsName(isDns1123Subdomain, 'subdomain');

/** Comma-separated items (`none` or empty for none), each checked. */
export const list =
  (check: (item: string, context: ReadContext) => void) =>
  (raw: string, context: ReadContext): readonly string[] => {
    const items = raw
      .split(',')
      .map((item) => item.trim())
      .filter((item) => item && item !== 'none');
    for (const item of items) check(item, context);
    return items;
  };

export const existingFile = (raw: string | undefined, { setting, fileExists }: ReadContext): string | undefined => {
  if (raw !== undefined && !fileExists(raw)) throw new ConfigError(setting, `file not found: ${raw}`);
  return raw;
};

/** A TLS file: the certificate and the key come together (the error names the one missing), and exist. */
export const tlsFile =
  (pair: string) =>
  (raw: string | undefined, context: ReadContext): string | undefined => {
    if ((raw === undefined) !== (context.other(pair) === undefined)) {
      throw new ConfigError(raw === undefined ? context.setting : pair, 'TLS needs both ROLLPLANE_TLS_CERT and ROLLPLANE_TLS_KEY');
    }
    return existingFile(raw, context);
  };

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** Which Kubernetes to drive and, in kubeconfig mode, the file(s): ROLLPLANE_KUBE and KUBECONFIG decide together. */
export function kubeTarget(context: ReadContext): { mode: KubeMode; kubeconfigPath: string | undefined } {
  const explicit = context.other('KUBECONFIG');
  const defaultFile = path.join(context.homeDir, '.kube', 'config');
  const kubeconfigPath = explicit ?? (context.fileExists(defaultFile) ? defaultFile : undefined);
  const raw = context.other('ROLLPLANE_KUBE');
  const mode: KubeMode = raw
    ? oneOf<KubeMode>('sim', 'kubeconfig', 'in-cluster')(raw, { ...context, setting: 'ROLLPLANE_KUBE' })
    : kubeconfigPath
      ? 'kubeconfig'
      : context.fileExists(SERVICE_ACCOUNT_TOKEN)
        ? 'in-cluster'
        : 'sim';
  return { mode, kubeconfigPath };
}

export function kubeconfigFiles(_raw: string | undefined, context: ReadContext): string | undefined {
  const { mode, kubeconfigPath } = kubeTarget(context);
  if (mode !== 'kubeconfig') return undefined;
  if (!kubeconfigPath) throw new ConfigError('KUBECONFIG', 'ROLLPLANE_KUBE=kubeconfig needs KUBECONFIG or ~/.kube/config');
  // KUBECONFIG may be a list of files (path-separated), as kubectl allows; each must exist.
  for (const file of kubeconfigPath.split(path.delimiter)) {
    if (!context.fileExists(file)) throw new ConfigError('KUBECONFIG', `file not found: ${file}`);
  }
  return kubeconfigPath;
}

/** `deployment` was removed (issue 14): it is named in the error so an old setting fails loudly, not silently. */
export function agentMode(raw: string, context: ReadContext): 'auto' | 'coexist' | 'direct' {
  if (raw === 'deployment') {
    throw new ConfigError(
      context.setting,
      'the deployment mode was removed: it needed an unreleased agent build and wrote status.agentDeploymentRef, which the IPPool CRD prunes; use auto, coexist or direct',
    );
  }
  // `pod` was the old name of what is now direct mode beside no controller: auto does that and more.
  return oneOf('auto', 'coexist', 'direct')(raw === 'pod' ? 'auto' : raw, context);
}

export function vmDhcpControllerRef(raw: string, { setting }: ReadContext): { namespace: string; name: string } | undefined {
  if (raw === 'auto') return undefined;
  const ref = parseNamespacedName(raw, isDns1123Label);
  if (!ref) throw new ConfigError(setting, `expected auto or namespace/name of a Deployment (got "${raw.slice(0, 80)}")`);
  return ref;
}

/** `namespace/name` of the vc-manager Deployment, or `none`. */
export function vcManagerRef(raw: string, { setting }: ReadContext): { namespace: string; name: string } | null {
  if (raw === 'none') return null;
  const ref = parseNamespacedName(raw);
  if (!ref) throw new ConfigError(setting, `"${raw.slice(0, 80)}" is not namespace/name or none`);
  return ref;
}

export function imageReference(raw: string, { setting }: ReadContext): string {
  try {
    parseImageReference(raw, setting);
  } catch (error) {
    throw new ConfigError(setting, (error as Error).message.replace(new RegExp(`^${setting}: `), ''));
  }
  return raw;
}

export function simFleet(raw: string, { setting }: ReadContext): string {
  const upstream = raw.split(',').find((p) => p.startsWith('upstream='));
  let validUpstream = true;
  try {
    if (upstream) parseUpstreamSpec(upstream.slice('upstream='.length));
  } catch {
    validUpstream = false;
  }
  if (!/^(demo|empty|[a-z]+=\d+(,[a-z]+=\d+)*)(,upstream=(none|[a-z:-]+(\+[a-z:-]+)*))?$/.test(raw) || !validUpstream) {
    throw new ConfigError(
      setting,
      `must be demo, empty or sizes like pools=1000,nodes=50, optionally followed by ,upstream=<${UPSTREAM_TOKENS.join('|')}>[+...] (got "${raw}")`,
    );
  }
  return raw;
}

/** ROLLPLANE_AUTH with HOST: `auto` is off on loopback only, and off is refused elsewhere. */
export function authEnabled(raw: string, context: ReadContext): boolean {
  const mode = oneOf('auto', 'on', 'off')(raw, context);
  const host = context.other('HOST')!;
  const enabled = mode === 'on' || (mode === 'auto' && !isLoopback(host));
  if (!enabled && !isLoopback(host)) {
    throw new ConfigError(context.setting, `authentication may be off only when HOST is a loopback address (HOST is "${host}")`);
  }
  return enabled;
}

/** The admin token from ROLLPLANE_ADMIN_TOKEN or the file ROLLPLANE_ADMIN_TOKEN_FILE names, and where it came from. */
export function adminToken(raw: string | undefined, context: ReadContext): { value: string; source: 'flag' | 'env' | 'file' } | undefined {
  const file = context.other('ROLLPLANE_ADMIN_TOKEN_FILE');
  if (file !== undefined && raw !== undefined) {
    throw new ConfigError('ROLLPLANE_ADMIN_TOKEN_FILE', 'set either ROLLPLANE_ADMIN_TOKEN or ROLLPLANE_ADMIN_TOKEN_FILE, not both');
  }
  let value = raw;
  if (file !== undefined) {
    try {
      value = context.readFile(file).replace(/\r?\n$/, '');
    } catch (error) {
      throw new ConfigError('ROLLPLANE_ADMIN_TOKEN_FILE', `cannot read ${file}: ${(error as Error).message}`);
    }
  }
  if (value === undefined) return undefined;
  if (value.length < 32 || value.length > 256 || !/^[\x21-\x7e]+$/.test(value)) {
    throw new ConfigError(file !== undefined ? 'ROLLPLANE_ADMIN_TOKEN_FILE' : context.setting, 'must be 32 to 256 printable ASCII characters without spaces');
  }
  return { value, source: file !== undefined ? 'file' : context.fromFlag ? 'flag' : 'env' };
}

export function network(item: string, { setting }: ReadContext): void {
  const [address, prefix, extra] = item.split('/');
  const family = isIP(address ?? '');
  if (extra !== undefined || family === 0 || !/^\d{1,3}$/.test(prefix ?? '') || Number(prefix) > (family === 4 ? 32 : 128)) {
    throw new ConfigError(setting, `"${item.slice(0, 80)}" is not a network such as 10.20.0.0/16 or fd00::/8`);
  }
}

export function publicUrl(raw: string | undefined, { setting }: ReadContext): string | undefined {
  if (raw === undefined || raw === 'none') return undefined;
  if (!/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/.test(raw)) {
    throw new ConfigError(setting, `must be an http(s) URL without query or fragment, such as https://rollplane.example.com (got "${raw.slice(0, 80)}")`);
  }
  return raw.replace(/\/+$/, '');
}

export function databaseUrl(raw: string, { setting }: ReadContext): string {
  try {
    parseDatabaseUrl(raw);
  } catch (error) {
    if (error instanceof DatabaseUrlError) throw new ConfigError(setting, error.message);
    throw error;
  }
  return raw;
}

/** A host name or an IP address (v6 with or without brackets). */
export function hostName(raw: string, { setting }: ReadContext): string {
  if (!/^[A-Za-z0-9.:\-[\]]+$/.test(raw)) throw new ConfigError(setting, `not a host name or IP address (got "${raw}")`);
  return raw;
}
