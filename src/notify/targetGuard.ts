import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/**
 * Where notification sinks may point (the SSRF guard; docs/adr/0035): http(s) only, no credentials in the URL, and no
 * address that is not on the public internet — loopback, private, link-local (the cloud metadata endpoint,
 * 169.254.169.254), carrier-grade NAT, multicast, reserved, documentation and their IPv6 twins — unless an operator
 * allows its network (ROLLPLANE_NOTIFY_ALLOW_NETWORKS). A deployer who may create subscriptions must not be able to make
 * rollplane call its own API, its pod network or the metadata endpoint.
 *
 * Checked three times: the URL and every address its name resolves to when the subscription is saved; again when a
 * delivery connects, by the lookup the connection itself uses (so a name that resolved to a public address at the
 * check and to a private one now, DNS rebinding, is refused: there is no second resolution to race); and the socket's
 * remote address once connected.
 */

export class TargetRefusedError extends Error {
  override readonly name = 'TargetRefusedError';
}

type Resolve = (hostname: string) => Promise<{ address: string; family: number }[]>;

const defaultResolve: Resolve = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/** Not on the public internet (IANA special-purpose registries), except what the operator allows. */
const NOT_PUBLIC: readonly [string, number, 'ipv4' | 'ipv6'][] = [
  ['0.0.0.0', 8, 'ipv4'],
  ['10.0.0.0', 8, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'],
  ['127.0.0.0', 8, 'ipv4'],
  ['169.254.0.0', 16, 'ipv4'],
  ['172.16.0.0', 12, 'ipv4'],
  ['192.0.0.0', 24, 'ipv4'],
  ['192.0.2.0', 24, 'ipv4'],
  ['192.88.99.0', 24, 'ipv4'],
  ['192.168.0.0', 16, 'ipv4'],
  ['198.18.0.0', 15, 'ipv4'],
  ['198.51.100.0', 24, 'ipv4'],
  ['203.0.113.0', 24, 'ipv4'],
  ['224.0.0.0', 4, 'ipv4'],
  ['240.0.0.0', 4, 'ipv4'],
  ['::', 128, 'ipv6'],
  ['::1', 128, 'ipv6'],
  ['100::', 64, 'ipv6'],
  ['2001::', 23, 'ipv6'],
  ['2001:db8::', 32, 'ipv6'],
  ['2002::', 16, 'ipv6'],
  ['fc00::', 7, 'ipv6'],
  ['fe80::', 10, 'ipv6'],
  ['fec0::', 10, 'ipv6'],
  ['ff00::', 8, 'ipv6'],
];

/** An IPv4 address carried in an IPv6 one (IPv4-mapped ::ffff:a.b.c.d, NAT64 64:ff9b::a.b.c.d), or undefined. */
function embeddedIpv4(address: string): string | undefined {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|64:ff9b::)(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/.exec(lower);
  if (dotted) return dotted[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (!hex) return undefined;
  const high = Number.parseInt(hex[1]!, 16);
  const low = Number.parseInt(hex[2]!, 16);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

/** `a.b.c.d/n` or `v6::/n` → [network, prefix, family]; throws on anything else. */
export function parseCidr(text: string): [string, number, 'ipv4' | 'ipv6'] {
  const [network, prefixText, extra] = text.trim().split('/');
  const family = isIP(network ?? '');
  const prefix = Number(prefixText);
  if (extra !== undefined || family === 0 || !/^\d{1,3}$/.test(prefixText ?? '') || prefix > (family === 4 ? 32 : 128)) {
    throw new Error(`"${text}" is not a network such as 10.1.0.0/16 or fd00::/8`);
  }
  return [network!, prefix, family === 4 ? 'ipv4' : 'ipv6'];
}

export class TargetGuard {
  private readonly notPublic = new BlockList();
  private readonly allowed = new BlockList();

  /** `allowNetworks`: CIDRs that may be reached although not public (the tests' receiver: 127.0.0.0/8). */
  constructor(
    allowNetworks: readonly string[] = [],
    private readonly resolve: Resolve = defaultResolve,
  ) {
    for (const [network, prefix, family] of NOT_PUBLIC) this.notPublic.addSubnet(network, prefix, family);
    for (const cidr of allowNetworks) {
      const [network, prefix, family] = parseCidr(cidr);
      this.allowed.addSubnet(network, prefix, family);
    }
  }

  /** Whether a delivery may connect to this IP address. */
  isAllowedAddress(address: string): boolean {
    const family = isIP(address);
    if (family === 0) return false;
    const v4 = family === 6 ? embeddedIpv4(address) : undefined;
    if (v4 !== undefined) return this.isAllowedAddress(v4);
    const type = family === 4 ? 'ipv4' : 'ipv6';
    return this.allowed.check(address, type) || !this.notPublic.check(address, type);
  }

  /** The URL, parsed, when its form may be a sink; throws TargetRefusedError saying why not. Resolves nothing. */
  parse(raw: string): URL {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new TargetRefusedError('must be an absolute http:// or https:// URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TargetRefusedError(`must use http or https (got ${url.protocol.replace(':', '')})`);
    if (url.username || url.password) throw new TargetRefusedError('must not carry credentials (user:password@); use the subscription secret or token');
    if (!url.hostname) throw new TargetRefusedError('must name a host');
    return url;
  }

  /**
   * At sending: the URL's form, and its address when it is an IP literal (a connection to a literal makes no lookup);
   * a name is checked by `lookup`, on the connection itself.
   */
  checkForSending(raw: string): URL {
    const url = this.parse(raw);
    const host = hostOf(url);
    if (isIP(host) && !this.isAllowedAddress(host)) throw refused(host);
    return url;
  }

  /**
   * Parses the URL and checks the address it names, or every address its name resolves to now: one refused address
   * refuses the URL (a name with a public and a private address would reach the private one on some attempts).
   */
  async check(raw: string): Promise<URL> {
    const url = this.parse(raw);
    const host = hostOf(url);
    if (isIP(host)) {
      if (!this.isAllowedAddress(host)) throw refused(host);
      return url;
    }
    let addresses: { address: string }[];
    try {
      addresses = await this.resolve(host);
    } catch (error) {
      throw new TargetRefusedError(`cannot resolve ${host}: ${(error as NodeJS.ErrnoException).code ?? 'lookup failed'}`);
    }
    if (addresses.length === 0) throw new TargetRefusedError(`${host} has no address`);
    const bad = addresses.find((a) => !this.isAllowedAddress(a.address));
    if (bad) throw refused(bad.address, host);
    return url;
  }

  /**
   * The lookup a delivery's connection uses: resolves once, and hands the connection only allowed addresses (all of
   * them must be, as in `check`). An IP literal never reaches a lookup: `check` covers it before the request.
   */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    this.resolve(hostname).then(
      (addresses) => {
        const bad = addresses.find((a) => !this.isAllowedAddress(a.address));
        if (addresses.length === 0 || bad) {
          callback(bad ? refused(bad.address, hostname) : new TargetRefusedError(`${hostname} has no address`), '', 0);
          return;
        }
        const wanted = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
        const usable = wanted.length > 0 ? wanted : addresses;
        if (options.all) (callback as unknown as (error: null, all: { address: string; family: number }[]) => void)(null, usable);
        else callback(null, usable[0]!.address, usable[0]!.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };
}

/** The URL's host without IPv6 brackets. */
export function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

function refused(address: string, host?: string): TargetRefusedError {
  return new TargetRefusedError(
    `${host ? `${host} resolves to ${address}, which` : `${address}`} is not a public address (loopback, private, link-local or reserved); an operator may allow its network with ROLLPLANE_NOTIFY_ALLOW_NETWORKS`,
  );
}
