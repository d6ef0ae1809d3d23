/**
 * Which upstream controllers a simulated cluster has installed, as the fleet option `upstream=...` names them.
 * Installing one means creating the objects its own installer creates (a Helm chart, a manifest); the simulated
 * controller then runs for as long as its Deployment is there, configured by that Deployment's arguments.
 */
import { ValidationError } from '../../../errors.js';

export interface UpstreamSelection {
  /** harvester/vm-dhcp-controller (chart `harvester-vm-dhcp-controller`); `noAgent` adds `--no-agent` to its args. */
  vmDhcp?: {
    noAgent?: boolean;
    agentImage?: string;
    /** The chart's appVersion (`vm-dhcp@v1.8.1`); default v0.3.0. */
    version?: string;
    /** Installed by Harvester as the Addon `harvester-vm-dhcp-controller` (`vm-dhcp:addon`), not by `helm install`. */
    addon?: boolean;
  };
  /** The CAPN vc-manager; `partialUpgrade` adds `--feature-gates=ClusterVersionPartialUpgrade=true` (upstream default off). */
  vcManager?: { partialUpgrade?: boolean };
  /** The cloud-api-adaptor DaemonSet and `peer-pods-cm` as the `peerpods` chart installs them. */
  caa?: boolean;
}

const TOKENS: Record<string, (s: UpstreamSelection) => void> = {
  'vm-dhcp': (s) => {
    s.vmDhcp = { ...s.vmDhcp };
  },
  'vm-dhcp:no-agent': (s) => {
    s.vmDhcp = { ...s.vmDhcp, noAgent: true };
  },
  'vc-manager': (s) => {
    s.vcManager = { ...s.vcManager };
  },
  'vc-manager:partial-upgrade': (s) => {
    s.vcManager = { ...s.vcManager, partialUpgrade: true };
  },
  caa: (s) => {
    s.caa = true;
  },
  'vm-dhcp:addon': (s) => {
    s.vmDhcp = { ...s.vmDhcp, addon: true };
  },
};

export const UPSTREAM_TOKENS = Object.freeze(Object.keys(TOKENS));

/** Parses `vm-dhcp+vc-manager:partial-upgrade+caa` (`+`-separated, since `,` separates the fleet's own parts); `none` is empty. */
export function parseUpstreamSpec(text: string): UpstreamSelection {
  const selection: UpstreamSelection = {};
  const trimmed = text.trim();
  if (trimmed === 'none') return selection;
  for (const part of trimmed.split('+').map((t) => t.trim())) {
    // `vm-dhcp@v1.8.1` or `vm-dhcp:no-agent@v0.2.1`: the chart's version.
    const [token = '', version] = part.split('@');
    if (version !== undefined) {
      if (!token.startsWith('vm-dhcp') || !/^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(version)) {
        throw new ValidationError('fleet', `upstream=${text}: only vm-dhcp takes a version, as vm-dhcp@v1.8.1 (got "${part}")`);
      }
    }
    const apply = TOKENS[token];
    if (!apply)
      throw new ValidationError(
        'fleet',
        `upstream=${text}: expected none or ${UPSTREAM_TOKENS.join('|')} joined by + (vm-dhcp also as vm-dhcp@<version>) (got "${token}")`,
      );
    apply(selection);
    if (version !== undefined) selection.vmDhcp = { ...selection.vmDhcp, version: version.startsWith('v') ? version : `v${version}` };
  }
  return selection;
}

/** Both selections together (a behaviour selected by either is installed; options add up). */
export function mergeSelections(a: UpstreamSelection | undefined, b: UpstreamSelection | undefined): UpstreamSelection {
  const out: UpstreamSelection = {};
  if (a?.vmDhcp || b?.vmDhcp) out.vmDhcp = { ...a?.vmDhcp, ...b?.vmDhcp };
  if (a?.vcManager || b?.vcManager) out.vcManager = { ...a?.vcManager, ...b?.vcManager };
  if (a?.caa || b?.caa) out.caa = true;
  return out;
}

export function isEmptySelection(s: UpstreamSelection | undefined): boolean {
  return !s || (!s.vmDhcp && !s.vcManager && !s.caa);
}
