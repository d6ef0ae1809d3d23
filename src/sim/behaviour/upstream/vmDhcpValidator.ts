/**
 * The vm-dhcp webhook's IPPool validator (harvester/vm-dhcp-controller `pkg/webhook/ippool/validator.go`, with
 * `pkg/util/network.go` and `pkg/webhook/common.go`), as two generations:
 * - **v0.3.0**: the service CIDR comes from every node's `rke2.io/node-args` annotation (`--service-cidr`), and every
 *   key of `status.ipv4.allocated` counts as taken by the server IP, `RESERVED` included — so a pool whose server IP
 *   lies inside its own range (which the controller marks `RESERVED`) refuses every UPDATE;
 * - **v0.3.1 and later** (through main): the webhook's own `--service-cidr` flag (default 10.53.0.0/16), and only
 *   allocated and `EXCLUDED` addresses collide with the server IP.
 * CREATE and UPDATE check, in order: the pool's addresses parse, its NetworkAttachmentDefinition exists, its CIDR does
 * not overlap the service CIDR, start/end/server/router lie in the subnet and are neither its network nor broadcast
 * address, the server IP is not the router's nor taken. An UPDATE of a pool being deleted passes. DELETE checks
 * VirtualMachineNetworkConfigs, which the simulator does not serve: it passes.
 */
import type { KubeObject, ObjectStore } from '../../types.js';
import { parseSemverTag } from '../../../util/imageReference.js';
import { rsplit } from './vmDhcpChart.js';
import { toInt, toText } from './vmDhcpIpam.js';

export interface VmDhcpWebhookConfig {
  /** The webhook's version (its image tag): v0.3.0 validates differently from every later release. */
  version: string;
  /** `--service-cidr` (v0.3.1+; default 10.53.0.0/16). */
  serviceCIDR: string;
}

interface Net {
  network: number;
  broadcast: number;
  prefix: number;
  text: string;
}

/** Why the write is refused (the text upstream returns, which the library sends as a 500 InternalError), or undefined. */
export function validateIPPool(
  store: Pick<ObjectStore, 'get' | 'list' | 'resourceType'>,
  config: VmDhcpWebhookConfig,
  operation: 'CREATE' | 'UPDATE' | 'DELETE',
  pool: KubeObject,
): string | undefined {
  if (operation === 'DELETE') return undefined;
  if (operation === 'UPDATE' && pool.metadata.deletionTimestamp) return undefined;
  const verb = operation === 'CREATE' ? 'create' : 'update';
  const fail = (why: string) => `cannot ${verb} IPPool ${pool.metadata.namespace}/${pool.metadata.name} because ${why}`;
  const v4 = pool.spec?.ipv4Config ?? {};
  const net = loadCIDR(String(v4.cidr ?? ''));
  if (typeof net === 'string') return fail(net);
  const addr = (value: unknown): number | undefined | string => {
    if (value === undefined || value === '') return undefined;
    const n = toInt(String(value));
    return n === undefined ? `ParseAddr(${JSON.stringify(String(value))}): unable to parse IP` : n;
  };
  const start = addr(v4.pool?.start);
  const end = addr(v4.pool?.end);
  const server = addr(v4.serverIP);
  const router = addr(v4.router);
  for (const parsed of [start, end, server, router]) if (typeof parsed === 'string') return fail(parsed);

  const [nadNamespace, nadName] = rsplit(String(pool.spec?.networkName ?? ''));
  const nads = store.resourceType('k8s.cni.cncf.io', 'network-attachment-definitions');
  if (!nads || !store.get(nads, nadNamespace || 'default', nadName)) return fail(`network-attachment-definitions.k8s.cni.cncf.io "${nadName}" not found`);

  const legacy = isV030(config.version);
  const cidrError = legacy ? checkCIDRFromNodes(store, String(v4.cidr), net) : checkCIDR(String(v4.cidr), net, config.serviceCIDR);
  if (cidrError) return fail(cidrError);

  const inNet = (ip: number) => ip >>> (32 - net.prefix) === net.network >>> (32 - net.prefix) || net.prefix === 0;
  for (const [label, ip] of [
    ['start', start],
    ['end', end],
  ] as const) {
    if (typeof ip !== 'number') continue;
    if (!inNet(ip)) return fail(`${label} ip ${toText(ip)} is not within subnet`);
    if (ip === net.network) return fail(`${label} ip ${toText(ip)} is the same as network ip`);
    if (ip === net.broadcast) return fail(`${label} ip ${toText(ip)} is the same as broadcast ip`);
  }

  if (typeof server === 'number') {
    const same = legacy ? 'cannot be the same as' : 'is the same as';
    if (!inNet(server)) return fail(`server ip ${toText(server)} is not within subnet`);
    if (server === net.network) return fail(`server ip ${toText(server)} ${same} network ip`);
    if (server === net.broadcast) return fail(`server ip ${toText(server)} ${same} broadcast ip`);
    if (typeof router === 'number' && server === router) return fail(`server ip ${toText(server)} ${same} router ip`);
    if (operation === 'UPDATE') {
      for (const [ip, mark] of Object.entries<string>(pool.status?.ipv4?.allocated ?? {})) {
        if (toInt(ip) !== server) continue;
        // v0.3.0 LoadAllocated returns every key; later releases leave RESERVED (the server and router) out.
        if (legacy) return fail(`server ip ${toText(server)} is already allocated`);
        if (mark !== 'RESERVED') return fail(`server ip ${toText(server)} is already occupied`);
      }
    }
  }

  if (typeof router === 'number') {
    if (!inNet(router)) return fail(`router ip ${toText(router)} is not within subnet`);
    if (router === net.network) return fail(`router ip ${toText(router)} is the same as network ip`);
    // Upstream prints the broadcast address here, not the router's.
    if (router === net.broadcast) return fail(`router ip ${toText(net.broadcast)} is the same as broadcast ip`);
  }
  return undefined;
}

/** v0.3.0 (and anything before it) validates the v0.3.0 way; an unparsable tag (main-head) is today's code. */
function isV030(version: string): boolean {
  const v = parseSemverTag(version);
  return v !== undefined && v.major === 0 && (v.minor < 3 || (v.minor === 3 && v.patch === 0));
}

/** `util.LoadCIDR` (net.ParseCIDR): the subnet, or Go's error text. */
function loadCIDR(cidr: string): Net | string {
  const [base, bits, extra] = cidr.split('/');
  const ip = toInt(base ?? '');
  const prefix = Number(bits);
  if (ip === undefined || extra !== undefined || !/^\d{1,2}$/.test(bits ?? '') || prefix > 32) return `invalid CIDR address: ${cidr}`;
  const mask = prefix === 0 ? 0 : (~0 << (32 - prefix)) >>> 0;
  const network = (ip & mask) >>> 0;
  return { network, broadcast: (network | (~mask >>> 0)) >>> 0, prefix, text: `${toText(network)}/${prefix}` };
}

/** Either network contains the other's network address (`ipNet.Contains(svc.IP) || svc.Contains(ipNet.IP)`). */
function overlaps(a: Net, b: Net): boolean {
  const contains = (outer: Net, ip: number) => outer.prefix === 0 || ip >>> (32 - outer.prefix) === outer.network >>> (32 - outer.prefix);
  return contains(a, b.network) || contains(b, a.network);
}

/** v0.3.1+: the flag's CIDR; an unparsable pool CIDR is not this check's business (it returns nil upstream). */
function checkCIDR(cidr: string, net: Net, serviceCIDR: string): string | undefined {
  const svc = loadCIDR(serviceCIDR);
  if (typeof svc === 'string') return svc;
  return overlaps(net, svc) ? `cidr ${cidr} overlaps cluster service cidr ${svc.text}` : undefined;
}

/** v0.3.0: every node's `rke2.io/node-args` (a JSON list holding `--service-cidr`, `<cidr>`), as RKE2 annotates nodes. */
function checkCIDRFromNodes(store: Pick<ObjectStore, 'list' | 'resourceType'>, cidr: string, net: Net): string | undefined {
  const nodes = store.resourceType('', 'nodes');
  for (const node of nodes ? store.list(nodes) : []) {
    const svc = nodeServiceCIDR(node);
    if (typeof svc === 'string') return svc;
    if (overlaps(net, svc.net)) return `cidr ${cidr} overlaps service cidr ${svc.text}`;
  }
  return undefined;
}

/**
 * A node's service CIDR as v0.3.0 reads it from `rke2.io/node-args`, or the error it returns. Kept per stored node
 * version (never modified): each IPPool write reads every node, and parsing them all again was quadratic in pools.
 */
const serviceCIDRs = new WeakMap<KubeObject, { net: Net; text: string } | string>();

function nodeServiceCIDR(node: KubeObject): { net: Net; text: string } | string {
  let svc = serviceCIDRs.get(node);
  if (svc === undefined) {
    svc = parseNodeServiceCIDR(node);
    serviceCIDRs.set(node, svc);
  }
  return svc;
}

function parseNodeServiceCIDR(node: KubeObject): { net: Net; text: string } | string {
  const name = node.metadata.name;
  const annotations = node.metadata.annotations;
  if (!annotations) return `service CIDR not found for node ${name}`;
  const raw = annotations['rke2.io/node-args'];
  if (raw === undefined) return `annotation rke2.io/node-args not found for node ${name}`;
  let args: unknown;
  try {
    args = JSON.parse(raw);
  } catch (error) {
    return (error as Error).message;
  }
  const list = Array.isArray(args) ? args.map(String) : [];
  const at = list.indexOf('--service-cidr');
  if (at < 0 || at + 1 >= list.length) return `serviceCIDR not found for node ${name}`;
  const svc = loadCIDR(list[at + 1]!);
  return typeof svc === 'string' ? svc : { net: svc, text: list[at + 1]! };
}
