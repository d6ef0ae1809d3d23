import type { ClientRequest, IncomingMessage } from 'node:http';
import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction, Socket } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';
import { parseCidr } from '../notify/targetGuard.js';
import { CredentialError } from './credentials.js';

/**
 * What a member connection may reach and read (attack 13, F2/F4 and F7; attack 14, F2-F4; docs/adr/0056-clusters-api.md):
 * - an opt-in deny list of networks (ROLLPLANE_MEMBER_CLUSTER_DENY_CIDRS, e.g. the metadata endpoint's link-local
 *   169.254.0.0/16): a member's server in one is refused at registration (its address, or every address its name
 *   resolves to) and again by the lookup each connection makes (so a name that resolves elsewhere later, DNS
 *   rebinding, is refused on connect: there is no second resolution to race). Private networks are where member
 *   clusters live, so nothing is denied unless the operator says so. The unspecified addresses (0.0.0.0/8, ::) reach
 *   the host itself: a deny list that denies loopback denies them too.
 * - a cap on the bodies of /version and discovery (ROLLPLANE_MEMBER_CLUSTER_MAX_DISCOVERY_BYTES): an endless or huge
 *   answer (a 100,000-resource discovery cost 702 MB RSS) ends the request once past it.
 * - a cap on every other answer's body (ROLLPLANE_MEMBER_CLUSTER_MAX_LIST_BYTES: a list, a get, a write's answer) and
 *   on each line of a watch (ROLLPLANE_MEMBER_CLUSTER_MAX_WATCH_EVENT_BYTES: one event; the watch itself is long-lived),
 *   so that a hostile or broken member cannot exhaust rollplane's memory with a list that never ends or a watch line
 *   that never does (client-node reads a list whole, and its Watch holds an unterminated line whole). The request
 *   fails, and the connection is told (`onRefused`), so that the member's health says why (ADR 0060).
 * - on every request (lists and watches too): no compression (`Accept-Encoding: identity`, and an encoded answer is
 *   refused unread: client-node inflated whatever it was sent, so 1 MB of gzip became 1 GiB past any cap), and no
 *   redirect followed (a kube-apiserver does not redirect API calls; a followed one reached a denied address).
 */
export interface MemberNetworkRules {
  denyNetworks: readonly string[];
  maxDiscoveryBytes: number;
  /** Largest body of any other answer but a watch's (a list, a get, a write's answer); none: uncapped. */
  maxListBytes?: number;
  /** Largest line of a watch (one event); none: uncapped. */
  maxWatchEventBytes?: number;
}

/** Which cap an answer is under, and what to say when it is passed. */
interface AnswerCap {
  max: number;
  /** Counted per line (a watch's events) rather than over the whole body. */
  perLine: boolean;
  /** What was too large, for the error: `a list answer`, `a watch event`, `the /version or discovery answer`. */
  what: string;
  /** The setting that sets it, named in the error. */
  setting: string;
}

type Resolve = (hostname: string) => Promise<{ address: string; family: number }[]>;

/**
 * What a member connection refused, by code (the member's health message: never an address): EADDRDENIED (the deny
 * list), ERESPONSE_TOO_LARGE (a /version or discovery answer past the cap), ECONTENT_ENCODING (an answer compressed
 * though none was asked for, refused before a byte of it is inflated), EREDIRECT (a redirect, not followed).
 */
export class MemberNetworkError extends Error {
  override readonly name = 'MemberNetworkError';
  constructor(
    readonly code: 'EADDRDENIED' | 'ERESPONSE_TOO_LARGE' | 'ECONTENT_ENCODING' | 'EREDIRECT',
    message: string,
  ) {
    super(message);
  }
}

/** 0.0.0.0/8 and :: (v4-mapped forms included): a connection to them reaches the host itself. */
const UNSPECIFIED = new BlockList();
UNSPECIFIED.addSubnet('0.0.0.0', 8, 'ipv4');
UNSPECIFIED.addAddress('::', 'ipv6');

export class MemberNetwork {
  private readonly denied = new BlockList();
  readonly denies: boolean;
  /** Whether the deny list denies the host itself (a loopback address): the unspecified addresses are then denied. */
  private readonly deniesHost: boolean;

  constructor(
    readonly rules: MemberNetworkRules,
    private readonly resolve: Resolve = (hostname) => dnsLookup(hostname, { all: true, verbatim: true }),
  ) {
    for (const cidr of rules.denyNetworks) {
      const [network, prefix, family] = parseCidr(cidr);
      this.denied.addSubnet(network, prefix, family);
    }
    this.denies = rules.denyNetworks.length > 0;
    this.deniesHost = this.denied.check('127.0.0.1', 'ipv4') || this.denied.check('::1', 'ipv6');
  }

  /** The same cap on discovery bodies without the deny list (for `local`, the operator's own connection). */
  withoutDenyList(): MemberNetwork {
    return new MemberNetwork({ ...this.rules, denyNetworks: [] }, this.resolve);
  }

  isDenied(address: string): boolean {
    const family = isIP(address);
    if (family === 0) return false;
    const mapped = family === 6 ? /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address)?.[1] : undefined;
    if (mapped) return this.isDenied(mapped);
    const type = family === 4 ? 'ipv4' : 'ipv6';
    return this.denied.check(address, type) || (this.deniesHost && UNSPECIFIED.check(address, type));
  }

  /**
   * At registration: refuses a server whose address, or any address its name resolves to now, is denied. Says which
   * setting refused it; names no address (the answers would make rollplane a scanner of its own network).
   */
  async checkServer(server: string, where: string): Promise<void> {
    if (!this.denies) return;
    const host = hostOf(server);
    const refuse = () =>
      new CredentialError('DENIED_ADDRESS', `${where}: the cluster's server is in a network ROLLPLANE_MEMBER_CLUSTER_DENY_CIDRS denies; refused`);
    if (isIP(host)) {
      if (this.isDenied(host)) throw refuse();
      return;
    }
    let addresses: { address: string }[];
    try {
      addresses = await this.resolve(host);
    } catch {
      // Not resolvable now: the connection's own lookup checks it when it resolves.
      return;
    }
    if (addresses.some((a) => this.isDenied(a.address))) throw refuse();
  }

  /** The lookup a member connection uses: resolves once and refuses when any address is denied. */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    this.resolve(hostname).then(
      (addresses) => {
        if (addresses.length === 0) return callback(Object.assign(new Error('no address'), { code: 'ENOTFOUND' }), '', 0);
        if (addresses.some((a) => this.isDenied(a.address))) return callback(new MemberNetworkError('EADDRDENIED', 'the address is denied'), '', 0);
        const wanted = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
        const usable = wanted.length > 0 ? wanted : addresses;
        if (options.all) (callback as unknown as (error: null, all: { address: string; family: number }[]) => void)(null, usable);
        else callback(null, usable[0]!.address, usable[0]!.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };

  /**
   * Makes `kubeConfig`'s connections obey the rules: the deny list's lookup (and, for a server given as an IP
   * literal, which no lookup sees, a refusal before the request goes out), the cap on discovery bodies, and no
   * compression nor redirect. Here, in the agent, because every request of every client-node door (typed APIs,
   * Watch) passes through it, whatever options its fetch call was given.
   */
  guard(kubeConfig: KubeConfig, onRefused?: (error: MemberNetworkError) => void): void {
    const target = kubeConfig as unknown as { createAgent: (cluster: unknown, options: Record<string, unknown>) => unknown };
    const create = target.createAgent.bind(kubeConfig);
    const patched = new WeakSet<object>();
    target.createAgent = (cluster, options) => {
      const server = (cluster as { server?: string } | null)?.server ?? '';
      const literal = hostOf(server);
      const deniedLiteral = this.denies && isIP(literal) !== 0 && this.isDenied(literal);
      const agent = create(cluster, this.denies ? { ...options, lookup: this.lookup } : options) as {
        addRequest(request: ClientRequest, options: unknown): void;
      };
      if (patched.has(agent)) return agent;
      patched.add(agent);
      if (deniedLiteral) {
        // No connection at all (not even a SYN): the request gets a socket that fails at once.
        (agent as unknown as { createConnection: () => Socket }).createConnection = () => {
          const socket = new Socket();
          process.nextTick(() => socket.destroy(new MemberNetworkError('EADDRDENIED', 'the address is denied')));
          return socket;
        };
      }
      const addRequest = agent.addRequest.bind(agent);
      agent.addRequest = (request, requestOptions) => {
        // Headers are not sent yet: client-node's fetch asked for gzip and deflate.
        request.setHeader('accept-encoding', 'identity');
        const cap = this.capOf(request.path);
        refuseUnsafeAnswers(request, cap, cap && !isDiscoveryPath(request.path) ? onRefused : undefined);
        addRequest(request, requestOptions);
      };
      return agent;
    };
  }

  /** The cap an answer to `path` is under: discovery's, a watch's per line, or any other answer's. */
  private capOf(path: string): AnswerCap | undefined {
    if (isDiscoveryPath(path)) {
      return {
        max: this.rules.maxDiscoveryBytes,
        perLine: false,
        what: 'the /version or discovery answer',
        setting: 'ROLLPLANE_MEMBER_CLUSTER_MAX_DISCOVERY_BYTES',
      };
    }
    if (isWatchPath(path)) {
      const max = this.rules.maxWatchEventBytes;
      return max === undefined ? undefined : { max, perLine: true, what: 'a watch event', setting: 'ROLLPLANE_MEMBER_CLUSTER_MAX_WATCH_EVENT_BYTES' };
    }
    const max = this.rules.maxListBytes;
    return max === undefined ? undefined : { max, perLine: false, what: 'a list answer', setting: 'ROLLPLANE_MEMBER_CLUSTER_MAX_LIST_BYTES' };
  }
}

/** A watch (client-node's Watch and informers ask `?watch=true`; `watch=1` is the same to a kube-apiserver). */
function isWatchPath(path: string): boolean {
  const query = path.split('?')[1];
  if (!query) return false;
  const watch = new URLSearchParams(query).get('watch');
  return watch === 'true' || watch === '1';
}

/** /version and discovery documents (`/api`, `/api/v1`, `/apis`, `/apis/<group>`, `/apis/<group>/<version>`). */
function isDiscoveryPath(path: string): boolean {
  const clean = path.split('?')[0]!;
  return clean === '/version' || /^\/api(?:\/[^/]+)?\/?$/.test(clean) || /^\/apis(?:\/[^/]+(?:\/[^/]+)?)?\/?$/.test(clean);
}

/**
 * Fails `request` when its response is a redirect, is encoded, or announces or delivers more than its cap allows (the
 * whole body, or one line of a watch). This listener runs before client-node's fetch sees the response (it was added
 * first, when the request was made). `onRefused` hears of a body past its cap.
 */
function refuseUnsafeAnswers(request: ClientRequest, cap: AnswerCap | undefined, onRefused?: (error: MemberNetworkError) => void): void {
  request.once('response', (response: IncomingMessage) => {
    const status = response.statusCode ?? 0;
    if (status >= 300 && status < 400 && status !== 304) {
      refuseAnswer(request, response, new MemberNetworkError('EREDIRECT', `the member answered ${status}: redirects are not followed`));
      return;
    }
    const encoding = response.headers['content-encoding']?.trim().toLowerCase();
    if (encoding && encoding !== 'identity') {
      refuseAnswer(request, response, new MemberNetworkError('ECONTENT_ENCODING', 'the answer is encoded though none was asked for'));
      return;
    }
    if (cap === undefined) return;
    const { max, perLine } = cap;
    // Made only when refused: an Error captures its stack, and one per answer was ~2% of the service's CPU over 300 members.
    const tooLarge = () => new MemberNetworkError('ERESPONSE_TOO_LARGE', `${cap.what} is larger than ${max} bytes (${cap.setting})`);
    if (!perLine && Number(response.headers['content-length'] ?? 0) > max) {
      const error = tooLarge();
      onRefused?.(error);
      refuseAnswer(request, response, error);
      return;
    }
    // The bytes of the body, or of the line being read (a watch: since the last newline).
    let read = 0;
    const onData = (chunk: Buffer) => {
      const last = perLine ? chunk.lastIndexOf(0x0a) : -1;
      // A line that ends in this chunk ends at its first newline: it may have passed the cap there.
      const ended = last >= 0 ? read + chunk.indexOf(0x0a) : 0;
      read = last >= 0 ? chunk.length - last - 1 : read + chunk.length;
      if (read <= max && ended <= max) return;
      response.off('data', onData);
      const error = tooLarge();
      onRefused?.(error);
      // client-node's fetch has the response by now: the error reaches whoever reads its body.
      request.destroy(error);
    };
    response.on('data', onData);
  });
}

/**
 * Refuses an answer before client-node's fetch sees it: the error is emitted now, so that the fetch rejects with it
 * rather than resolving (a Watch given a response whose body is already destroyed would wait for it forever); its
 * Location and Content-Encoding are dropped, so that the fetch, which still looks at the response, neither follows nor
 * inflates anything; and the connection is closed unread.
 */
function refuseAnswer(request: ClientRequest, response: IncomingMessage, error: Error): void {
  delete response.headers.location;
  delete response.headers['content-encoding'];
  request.emit('error', error);
  request.destroy();
}

function hostOf(server: string): string {
  try {
    const { hostname } = new URL(server);
    return hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  } catch {
    return '';
  }
}
