import { KubeConfig } from '@kubernetes/client-node';
import { isScalar, parseDocument, visit } from 'yaml';
import { AppError, ErrorCode } from '../errors.js';
import { authorityProblem, clientProblem } from './pemData.js';

/**
 * A member cluster's kubeconfig, checked before client-node sees it (docs/adr/0048-member-clusters.md). Credentials
 * come from people other than the operator (anyone who can write a labelled Secret), so a kubeconfig may not make
 * rollplane run a command (`exec`, `auth-provider`: unless the operator allows plugins) nor read a file of rollplane's
 * own host (`token-file`, `client-certificate`, `client-key`, `certificate-authority`: client-node reads `token-file`
 * while it parses, and would send rollplane's own service-account token to the member; kubectl's `tokenFile`, which
 * client-node ignores). Nor may it name a proxy (`proxy-url`: the deny list would see the proxy, not where it
 * connects), a server that is not an http(s) URL, or TLS data that does not parse (attack 14, F5 and F8). Nothing here
 * ever puts the kubeconfig, or any part of it, in an error: errors say what is wrong and where, by field and line.
 */

/** Why a kubeconfig was refused (the error's `details.reason`). */
export type CredentialProblem =
  | 'MALFORMED'
  | 'NO_CLUSTER'
  | 'EXEC_PLUGIN'
  | 'AUTH_PROVIDER'
  | 'FILE_REFERENCE'
  | 'FILE_PERMISSIONS'
  | 'UNREADABLE'
  | 'DENIED_ADDRESS'
  | 'PROXY_URL';

/** A refused credential: BAD_USER_INPUT with `details.reason`; the message names where it came from, never its content. */
export class CredentialError extends AppError {
  constructor(
    readonly reason: CredentialProblem,
    message: string,
  ) {
    super(ErrorCode.BadUserInput, message, { details: { reason } });
  }
}

export interface KubeconfigRules {
  /** ROLLPLANE_MEMBER_CLUSTER_EXEC_PLUGINS: allow `exec` and `auth-provider` users. */
  allowExecPlugins: boolean;
}

/** The fields that name a file of rollplane's host, and what gives the same inline. */
const FILE_FIELDS = {
  user: { 'token-file': 'token', tokenFile: 'token', 'client-certificate': 'client-certificate-data', 'client-key': 'client-key-data' },
  cluster: { 'certificate-authority': 'certificate-authority-data' },
} as const;

function fileField<T extends Record<string, string>>(fields: T, entry: Record<string, unknown>): [keyof T & string, string] | undefined {
  const field = Object.keys(fields).find((name) => entry[name] !== undefined);
  return field === undefined ? undefined : [field, fields[field]!];
}

/** https://host[:port][/path] or http://…: anything else (file:, unix:, no host) is no Kubernetes API server. */
function isHttpUrl(server: unknown): boolean {
  if (typeof server !== 'string') return false;
  try {
    const url = new URL(server);
    return (url.protocol === 'https:' || url.protocol === 'http:') && url.hostname !== '';
  } catch {
    return false;
  }
}

function entries(
  document: Record<string, unknown>,
  list: 'clusters' | 'users' | 'contexts',
  field: string,
  where: string,
): [string, Record<string, unknown>][] {
  const value = document[list];
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new CredentialError('MALFORMED', `${where}: "${list}" must be a list`);
  return value.map((item, i) => {
    const entry = (item ?? {}) as Record<string, unknown>;
    const body = entry[field];
    if (typeof entry !== 'object' || (body !== undefined && (typeof body !== 'object' || body === null))) {
      throw new CredentialError('MALFORMED', `${where}: ${list}[${i}].${field} must be a map`);
    }
    return [typeof entry.name === 'string' ? entry.name : `#${i}`, (body ?? {}) as Record<string, unknown>];
  });
}

/**
 * Parses and checks a kubeconfig (YAML or JSON text) and returns it loaded, on its current context. `where` names its
 * origin for the errors (a Secret's `namespace/name`, the credentials file and the entry). Throws CredentialError.
 */
export function parseMemberKubeconfig(text: string, where: string, rules: KubeconfigRules): KubeConfig {
  const parsed = parseDocument(text, { prettyErrors: false, uniqueKeys: true, merge: false });
  if (parsed.errors.length > 0) {
    const line = yamlErrorLine(text, parsed.errors[0]!);
    throw new CredentialError('MALFORMED', `${where}: the kubeconfig is not valid YAML (line ${line})`);
  }
  refuseIndirection(parsed, text, where);
  const document: unknown = parsed.toJS();
  if (!document || typeof document !== 'object' || Array.isArray(document)) throw new CredentialError('MALFORMED', `${where}: the kubeconfig is not a map`);
  const doc = document as Record<string, unknown>;
  for (const [name, user] of entries(doc, 'users', 'user', where)) {
    if (user.exec !== undefined && !rules.allowExecPlugins) {
      throw new CredentialError(
        'EXEC_PLUGIN',
        `${where}: user "${name}" uses an exec credential plugin, which would run a command inside rollplane; refused (ROLLPLANE_MEMBER_CLUSTER_EXEC_PLUGINS=true allows it)`,
      );
    }
    if (user['auth-provider'] !== undefined && !rules.allowExecPlugins) {
      throw new CredentialError(
        'AUTH_PROVIDER',
        `${where}: user "${name}" uses an auth-provider plugin, which runs code inside rollplane; refused (ROLLPLANE_MEMBER_CLUSTER_EXEC_PLUGINS=true allows it)`,
      );
    }
    const file = fileField(FILE_FIELDS.user, user);
    if (file) throw new CredentialError('FILE_REFERENCE', `${where}: user "${name}" names a file of rollplane's host (${file[0]}); give ${file[1]} instead`);
    const certData = user['client-certificate-data'];
    const keyData = user['client-key-data'];
    const tls = certData === undefined && keyData === undefined ? undefined : clientProblem(certData, keyData);
    if (tls) throw new CredentialError('MALFORMED', `${where}: user "${name}" ${tls}`);
  }
  for (const [name, cluster] of entries(doc, 'clusters', 'cluster', where)) {
    const file = fileField(FILE_FIELDS.cluster, cluster);
    if (file) throw new CredentialError('FILE_REFERENCE', `${where}: cluster "${name}" names a file of rollplane's host (${file[0]}); give ${file[1]} instead`);
    if (cluster['proxy-url'] !== undefined) {
      throw new CredentialError(
        'PROXY_URL',
        `${where}: cluster "${name}" names a proxy (proxy-url); member clusters are reached directly, where ROLLPLANE_MEMBER_CLUSTER_DENY_CIDRS can check the address`,
      );
    }
    if (cluster.server !== undefined && !isHttpUrl(cluster.server)) {
      throw new CredentialError('MALFORMED', `${where}: cluster "${name}" has a server that is not an https:// (or http://) URL with a host`);
    }
    const ca = cluster['certificate-authority-data'] === undefined ? undefined : authorityProblem(cluster['certificate-authority-data']);
    if (ca) throw new CredentialError('MALFORMED', `${where}: cluster "${name}" ${ca}`);
  }
  entries(doc, 'contexts', 'context', where);
  const kubeConfig = new KubeConfig();
  try {
    // client-node parses YAML again with another parser (js-yaml, which resolves merge keys): it is given the document
    // checked here, as JSON, so that what it loads is what was checked, whatever the two parsers disagree on.
    kubeConfig.loadFromString(JSON.stringify(document));
  } catch (error) {
    // client-node's messages name fields, never values; the cause is left out all the same (a logger would print it).
    throw new CredentialError('MALFORMED', `${where}: the kubeconfig is incomplete (${firstLine((error as Error).message)})`);
  }
  const cluster = kubeConfig.getCurrentCluster();
  if (!kubeConfig.getCurrentContext() || !cluster?.server) {
    throw new CredentialError('NO_CLUSTER', `${where}: the kubeconfig's current-context names no cluster with a server`);
  }
  // client-node refuses plain HTTP unless TLS verification is off, before sending anything: say so at registration
  // rather than as an unreachable member with no reason (attack 13, F9). Its address is not quoted.
  if (cluster.server.toLowerCase().startsWith('http://') && !cluster.skipTLSVerify) {
    throw new CredentialError(
      'MALFORMED',
      `${where}: cluster "${cluster.name}" is served over plain http://, which the Kubernetes client accepts only with insecure-skip-tls-verify: true; use https:// (or set that flag for a test cluster)`,
    );
  }
  return kubeConfig;
}

/**
 * Anchors, aliases and merge keys (`<<`) are refused: kubeconfigs written by kubectl, Cluster API or any provider never
 * use them, and they are how a document says one thing to one parser and another to the next (a merge key hid an
 * `exec` user from this check while client-node's parser resolved it and ran the command: attack 13, finding 1), or
 * grows a small text into a huge tree (alias bombs).
 */
function refuseIndirection(document: ReturnType<typeof parseDocument>, text: string, where: string): void {
  let found: { what: string; offset: number } | undefined;
  visit(document, {
    Alias(_key, node) {
      found = { what: 'an alias', offset: node.range?.[0] ?? 0 };
      return visit.BREAK;
    },
    Node(_key, node) {
      if (!node.anchor) return undefined;
      found = { what: 'an anchor', offset: node.range?.[0] ?? 0 };
      return visit.BREAK;
    },
    Pair(_key, pair) {
      const key = pair.key;
      if (!isScalar(key) || key.value !== '<<') return undefined;
      found = { what: 'a merge key (<<)', offset: key.range?.[0] ?? 0 };
      return visit.BREAK;
    },
  });
  if (found) {
    const line = text.slice(0, found.offset).split('\n').length;
    throw new CredentialError(
      'MALFORMED',
      `${where}: the kubeconfig uses ${found.what} (line ${line}); anchors, aliases and merge keys are not accepted in a member cluster's kubeconfig`,
    );
  }
}

/**
 * The line of a YAML error: the parser's own message quotes the text around it, credentials included, so a caller
 * says where only.
 */
export function yamlErrorLine(text: string, error: { pos: [number, number] }): number {
  return text.slice(0, error.pos[0]).split('\n').length;
}

function firstLine(message: string): string {
  return message.split('\n')[0]!.slice(0, 200);
}
