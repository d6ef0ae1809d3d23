/**
 * The controller's in-memory IPAM (upstream `pkg/ipam/ipam.go`), reduced to what shows in IPPool status: which
 * networks are initialised, and used/available counts. It is process memory: a restarted controller starts empty,
 * which is why every pool's CacheReady flips to False (`NotInitialized`) and back after a Helm upgrade.
 */
export class VmDhcpIpam {
  /** network name → ip → allocated. */
  private readonly networks = new Map<string, Map<string, boolean>>();

  isInitialized(network: string): boolean {
    return this.networks.has(network);
  }

  /** `NewIPSubnet`: every address from start to end inclusive, unallocated. */
  newSubnet(network: string, cidr: string, start: string, end: string): Error | undefined {
    const [base, bits] = cidr.split('/');
    const net = toInt(base ?? '');
    const prefix = Number(bits);
    if (net === undefined || !Number.isInteger(prefix) || prefix < 0 || prefix > 32) return new Error(`invalid CIDR address: ${cidr}`);
    const mask = prefix === 0 ? 0 : (~0 << (32 - prefix)) >>> 0;
    const broadcast = ((net & mask) | (~mask >>> 0)) >>> 0;
    const from = toInt(start);
    const to = toInt(end);
    const within = (ip: number | undefined) => ip !== undefined && (ip & mask) >>> 0 === (net & mask) >>> 0;
    if (!within(from)) return new Error(`start ip address ${start} is not within subnet ${cidr} range`);
    if (!within(to)) return new Error(`end ip address ${end} is not within subnet ${cidr} range`);
    if (from! > to!) return new Error(`end ip address ${end} is less than start ip address ${start}`);
    if (to === broadcast) return new Error(`end ip address ${end} equals broadcast ip address ${toText(broadcast)}`);
    const ips = new Map<string, boolean>();
    for (let ip = from!; ip <= to!; ip++) ips.set(toText(ip), false);
    this.networks.set(network, ips);
    return undefined;
  }

  revoke(network: string, ip: string): Error | undefined {
    const ips = this.networks.get(network);
    if (!ips) return new Error(`network ${network} does not exist`);
    ips.delete(ip);
    return undefined;
  }

  allocate(network: string, ip: string): void {
    const ips = this.networks.get(network);
    if (ips?.has(ip)) ips.set(ip, true);
  }

  counts(network: string): { used: number; available: number } | Error {
    const ips = this.networks.get(network);
    if (!ips) return new Error(`network ${network} does not exist`);
    let used = 0;
    for (const allocated of ips.values()) if (allocated) used++;
    return { used, available: ips.size - used };
  }

  delete(network: string): void {
    this.networks.delete(network);
  }

  clear(): void {
    this.networks.clear();
  }
}

/** A dotted IPv4 address as a 32-bit unsigned number; undefined when it is not one. */
export function toInt(ip: string): number | undefined {
  const parts = ip.split('.');
  if (parts.length !== 4) return undefined;
  let n = 0;
  for (const part of parts) {
    const v = Number(part);
    if (!/^\d{1,3}$/.test(part) || v > 255) return undefined;
    n = n * 256 + v;
  }
  return n;
}

export function toText(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

/** `util.IsIPInBetweenOf`. */
export function ipBetween(ip: string, start: string, end: string): boolean {
  const [a, s, e] = [toInt(ip), toInt(start), toInt(end)];
  return a !== undefined && s !== undefined && e !== undefined && a >= s && a <= e;
}
