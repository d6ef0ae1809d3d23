import { agentMode, dns1123Label, dns1123Subdomain, imageReference, integer, integerOrOff, vmDhcpControllerRef } from '../../configParsers.js';
import { defaultsOf, row } from '../../configRows.js';

/**
 * The agent pools' settings: rows of the configuration table (docs/adr/0037), which src/config.ts composes through the settings' list of
 * kinds (src/kinds/settings.ts, ADR 0051) as `config.agentPools`. A leaf: it imports only the rows' helpers, so that the CLI
 * (`--help`) and README's table read it without loading the kind.
 */
const MODULE = 'src/kinds/agentPool';

export const AGENT_POOL_SETTINGS = {
  mode: row({
    env: 'ROLLPLANE_AGENT_MODE',
    default: 'auto',
    module: MODULE,
    description:
      'How agent-pool rollouts work: `coexist` (beside a vm-dhcp-controller that deploys agents: hold pools, change its `--image`, release them in waves), `direct` (rollplane recreates agents; only without such a controller), `auto` (coexist when the controller deploys agents, else direct). A mode the cluster does not allow refuses the rollout (`CONFLICT`, reason `AGENT_MODE_MISMATCH`); `deployment` was removed and is an error',
    parse: agentMode,
  }),
  vmDhcpController: row({
    env: 'ROLLPLANE_VMDHCP_CONTROLLER',
    default: 'auto',
    module: MODULE,
    description:
      "The vm-dhcp-controller Deployment as `namespace/name`; `auto` finds it by the chart's labels (`app.kubernetes.io/name=harvester-vm-dhcp-controller`, `app.kubernetes.io/component=controller`)",
    parse: vmDhcpControllerRef,
  }),
  agentNamespace: row({
    env: 'ROLLPLANE_AGENT_NAMESPACE',
    default: 'harvester-system',
    module: MODULE,
    description: 'Namespace of the DHCP agents',
    parse: dns1123Label,
  }),
  agentImage: row({
    env: 'ROLLPLANE_AGENT_IMAGE',
    default: 'rancher/harvester-vm-dhcp-agent:v1.8.1',
    module: MODULE,
    description: 'Agent image for pools that have none recorded yet (rollouts change it per pool)',
    parse: imageReference,
  }),
  serviceAccountName: row({
    env: 'ROLLPLANE_AGENT_SERVICE_ACCOUNT',
    default: 'harvester-vm-dhcp-controller-agent',
    module: MODULE,
    description:
      "ServiceAccount of the agents rollplane creates (direct mode only): the vm-dhcp-controller chart's `<release fullname>-agent` (this default is release `harvester-vm-dhcp-controller`, as its README installs it)",
    parse: dns1123Subdomain,
  }),
  stuckGraceSeconds: row({
    env: 'ROLLPLANE_AGENT_STUCK_GRACE_SECONDS',
    default: '120',
    module: MODULE,
    description: 'Force-delete an agent Terminating this long on a NotReady node (`off` disables)',
    parse: integerOrOff(0, 86_400),
  }),
  // 64 (was 16): at 10,000 pools the reconciles wait on the API server more than they compute, and 16 left the service
  // idle a third of the time with thousands queued (issue 35: 20.6–28.7 s → 16.0–16.8 s, the same requests). An idle
  // worker costs about 0.6 KB; the API budget (ROLLPLANE_KUBE_QPS), not this, bounds the load on the API server.
  workers: row({ env: 'ROLLPLANE_AGENT_WORKERS', default: '64', module: MODULE, description: 'Concurrent IPPool reconciles', parse: integer(1, 256) }),
};

/** The rows at their defaults: what the kind's controllers fall back to when an option is left out. */
export const AGENT_POOL_DEFAULTS = defaultsOf(AGENT_POOL_SETTINGS);
