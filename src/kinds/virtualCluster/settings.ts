import { flag, integer, oneOf, vcManagerRef } from '../../configParsers.js';
import { defaultsOf, row } from '../../configRows.js';

/**
 * The virtual clusters' settings: rows of the configuration table (docs/adr/0037), which src/config.ts composes through the settings' list of
 * kinds (src/kinds/settings.ts, ADR 0051) as `config.virtualClusters`. A leaf: it imports only the rows' helpers, so that the CLI
 * (`--help`) and README's table read it without loading the kind.
 */
const MODULE = 'src/kinds/virtualCluster';

export const VIRTUAL_CLUSTER_SETTINGS = {
  partialUpgrade: row({
    env: 'ROLLPLANE_VC_PARTIAL_UPGRADE',
    default: 'true',
    module: MODULE,
    description: 'Feature gate ClusterVersionPartialUpgrade: `false` ignores the ready-for-upgrade label and refuses bumpClusterVersion',
    parse: flag,
  }),
  readyTimeoutMs: row({
    env: 'ROLLPLANE_VC_READY_TIMEOUT_SECONDS',
    default: '600',
    module: MODULE,
    description: 'How long one control-plane StatefulSet may take to roll',
    parse: integer(1, 86_400, 1000),
  }),
  pollIntervalMs: row({
    env: 'ROLLPLANE_VC_POLL_SECONDS',
    default: '2',
    module: MODULE,
    description: 'Re-check interval while waiting for a StatefulSet',
    parse: integer(1, 3600, 1000),
  }),
  keyAlgorithm: row({
    env: 'ROLLPLANE_VC_KEY_ALGORITHM',
    default: 'rsa-2048',
    module: MODULE,
    description:
      'Key type of regenerated control-plane certificates: `rsa-2048` (PKCS#1, as upstream) or `ecdsa-p256` (cheaper; breaks the CAPN vc-manager, which reads root-ca only as PKCS#1 RSA)',
    parse: oneOf('ecdsa-p256', 'rsa-2048'),
  }),
  vcManager: row({
    env: 'ROLLPLANE_VC_MANAGER',
    default: 'vc-manager/vc-manager',
    module: MODULE,
    description:
      '`namespace/name` of the CAPN vc-manager Deployment whose `--feature-gates` rollplane reads (gate `ClusterVersionPartialUpgrade` on: rollplane leaves upgrades to it, see docs/beside-upstream.md#virtual-clusters-beside-the-capn-vc-manager), or `none`',
    parse: vcManagerRef,
  }),
  workers: row({
    env: 'ROLLPLANE_VC_WORKERS',
    default: '10',
    module: MODULE,
    description: 'Concurrent VirtualCluster upgrade reconciles',
    parse: integer(1, 256),
  }),
};

/** The rows at their defaults: what the kind's controllers fall back to when an option is left out. */
export const VIRTUAL_CLUSTER_DEFAULTS = defaultsOf(VIRTUAL_CLUSTER_SETTINGS);
