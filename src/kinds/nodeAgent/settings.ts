import { ConfigError, dns1123Label, integer, list } from '../../configParsers.js';
import { defaultsOf, row } from '../../configRows.js';
import { parseNamespacedName } from '../../util/dnsNames.js';

/**
 * The node agents' settings: rows of the configuration table (docs/adr/0037), which src/config.ts composes through the settings' list of
 * kinds (src/kinds/settings.ts, ADR 0051) as `config.nodeAgents`. A leaf: it imports only the rows' helpers, so that the CLI
 * (`--help`) and README's table read it without loading the kind.
 */
const MODULE = 'src/kinds/nodeAgent';

export const NODE_AGENT_SETTINGS = {
  daemonSets: row({
    env: 'ROLLPLANE_NODE_AGENT_DAEMONSETS',
    default: 'none',
    module: MODULE,
    description: 'Comma-separated `namespace/name` DaemonSets to manage besides those labelled `rollplane.io/node-agent: "true"`',
    parse: list((item, { setting }) => {
      if (!parseNamespacedName(item)) {
        throw new ConfigError(setting, `"${item}" is not namespace/name`);
      }
    }),
  }),
  peerRuntimeClass: row({
    env: 'ROLLPLANE_NODE_AGENT_PEER_RUNTIME_CLASS',
    // Also the bump's default, DEFAULT_PEER_RUNTIME_CLASS in ./limits.ts (a leaf without imports, for the CLI): a bump
    // naming it names no class of its own. test/config.table.test.ts checks the two are the same. Not imported from there:
    // the settings rows are a leaf beside config.ts, and limits.ts is the kind's domain half.
    default: 'kata-remote',
    module: MODULE,
    description:
      "Runtime class of the peer pods gating each node when the agent sets no `RUNTIMECLASS_NAME` (the CAA's `peer-pods-cm`) and neither the bump nor the DaemonSet names one",
    parse: dns1123Label,
  }),
  workers: row({
    env: 'ROLLPLANE_NODE_AGENT_WORKERS',
    default: '4',
    module: MODULE,
    description: 'Concurrent node gate reconciles',
    parse: integer(1, 256),
  }),
};

/** The rows at their defaults: what the kind's controllers fall back to when an option is left out. */
export const NODE_AGENT_DEFAULTS = defaultsOf(NODE_AGENT_SETTINGS);
