import { PatchStrategy, setHeaderOptions, type V1Deployment } from '@kubernetes/client-node';
import { parseDocument } from 'yaml';
import { isAppError, ErrorCode } from '../../../errors.js';
import { kubeCall, type KubeClients } from '../../../kube/index.js';

/**
 * Who owns the vm-dhcp-controller's `--image` (ADR 0032). The chart renders it from `agent.image.repository` and
 * `agent.image.tag` (chart/templates/deployment.yaml); Harvester installs the chart as the Addon
 * `harvester-system/harvester-vm-dhcp-controller` (harvester/experimental-addons), whose controller renders the chart
 * from `spec.valuesContent` (harvester/harvester pkg/controller/master/addon) and puts its values back on the next
 * add-on change. A Helm release names itself on every object it creates (`meta.helm.sh/release-name`,
 * `meta.helm.sh/release-namespace`), and the add-on's release is the Addon's name in its namespace.
 */
export type ControllerOwner =
  /** A Harvester Addon: rollplane changes its `valuesContent`, and the add-on reconcile renders `--image`. */
  | { kind: 'addon'; namespace: string; name: string }
  /** A Helm release without an Addon: rollplane cannot run `helm`; the next `helm upgrade` puts its values back. */
  | { kind: 'helm'; namespace: string; release: string }
  /** Nobody (a raw manifest, or unknown): the Deployment itself is the source. */
  | { kind: 'none' };

export const HELM_RELEASE_NAME = 'meta.helm.sh/release-name';
export const HELM_RELEASE_NAMESPACE = 'meta.helm.sh/release-namespace';
export const ADDON_GROUP = 'harvesterhci.io';
export const ADDON_VERSION = 'v1beta1';
export const ADDON_PLURAL = 'addons';
const VM_DHCP_CHART = 'harvester-vm-dhcp-controller';

const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);

export interface Addon {
  metadata?: { namespace?: string; name?: string; resourceVersion?: string; generation?: number; annotations?: Record<string, string> };
  spec?: { chart?: string; enabled?: boolean; valuesContent?: string };
}

export function describeOwner(owner: ControllerOwner): string {
  switch (owner.kind) {
    case 'addon':
      return `the Harvester Addon ${owner.namespace}/${owner.name}`;
    case 'helm':
      return `the Helm release ${owner.namespace}/${owner.release}`;
    case 'none':
      return 'no release (a plain Deployment)';
  }
}

/** The owner of the controller Deployment: its Helm release, and the Addon of that release when Harvester installed it. */
export async function findOwner(clients: KubeClients, deployment: V1Deployment): Promise<ControllerOwner> {
  const annotations = deployment.metadata?.annotations ?? {};
  const release = annotations[HELM_RELEASE_NAME];
  if (!release) return { kind: 'none' };
  const namespace = annotations[HELM_RELEASE_NAMESPACE] ?? deployment.metadata?.namespace ?? '';
  const addon = await readAddon(clients, namespace, release);
  if (addon?.spec?.chart === VM_DHCP_CHART) return { kind: 'addon', namespace, name: release };
  return { kind: 'helm', namespace, release };
}

export async function readAddon(clients: KubeClients, namespace: string, name: string): Promise<Addon | undefined> {
  try {
    return (await kubeCall(`read Addon ${namespace}/${name}`, () =>
      clients.custom.getNamespacedCustomObject({ group: ADDON_GROUP, version: ADDON_VERSION, plural: ADDON_PLURAL, namespace, name }),
    )) as Addon;
  } catch (error) {
    // No Addon CRD (not Harvester) or no such Addon: a plain Helm release.
    if (isAppError(error) && (error.code === ErrorCode.NotFound || error.code === ErrorCode.Forbidden)) return undefined;
    throw error;
  }
}

/** `repository:tag` → the chart's agent.image values (the chart renders `repository:tag`; no tag → `latest`). */
export function agentImageValues(image: string): { repository: string; tag: string } {
  const colon = image.lastIndexOf(':');
  if (colon < 0 || colon < image.lastIndexOf('/')) return { repository: image, tag: 'latest' };
  return { repository: image.slice(0, colon), tag: image.slice(colon + 1) };
}

/** `valuesContent` with `agent.image.repository` and `agent.image.tag` set to `image`, everything else (comments too) kept. */
export function withAgentImage(valuesContent: string, image: string): string {
  const document = parseDocument(valuesContent ?? '');
  if (document.errors.length > 0) throw document.errors[0];
  const { repository, tag } = agentImageValues(image);
  document.setIn(['agent', 'image', 'repository'], repository);
  document.setIn(['agent', 'image', 'tag'], tag);
  return document.toString();
}

/** The agent image the Addon's values name, when they name one (`repository:tag`). */
export function addonAgentImage(valuesContent: string | undefined): string | undefined {
  const document = parseDocument(valuesContent ?? '');
  const repository = document.getIn(['agent', 'image', 'repository']);
  const tag = document.getIn(['agent', 'image', 'tag']);
  return typeof repository === 'string' && repository ? `${repository}:${typeof tag === 'string' && tag ? tag : 'latest'}` : undefined;
}

/**
 * Sets the agent image in the Addon's `valuesContent` (a JSON patch that first tests the old value: a concurrent edit
 * or add-on upgrade makes it fail with a conflict instead of being overwritten). The add-on reconcile then renders the
 * chart, and the controller Deployment's `--image` with it.
 */
export async function setAddonAgentImage(
  clients: KubeClients,
  owner: Extract<ControllerOwner, { kind: 'addon' }>,
  image: string,
  options: { dryRun?: boolean; fresh?: Addon; also?: readonly object[] } = {},
): Promise<void> {
  const addon = options.fresh ?? (await readAddon(clients, owner.namespace, owner.name));
  if (!addon) throw new Error(`the Addon ${owner.namespace}/${owner.name} is gone`);
  const old = addon.spec?.valuesContent ?? '';
  const next = withAgentImage(old, image);
  if (next === old) return;
  // `fresh`: the Addon as just read; the write lands only on that version of it (ImageWriteFence.ts). `also`: more
  // operations of the same patch (the marker naming the rollout, imageWriteMarker.ts).
  const precondition = options.fresh?.metadata?.resourceVersion
    ? [{ op: 'replace', path: '/metadata/resourceVersion', value: options.fresh.metadata.resourceVersion }]
    : [];
  await kubeCall(`set agent.image in the valuesContent of Addon ${owner.namespace}/${owner.name}`, () =>
    clients.custom.patchNamespacedCustomObject(
      {
        group: ADDON_GROUP,
        version: ADDON_VERSION,
        plural: ADDON_PLURAL,
        namespace: owner.namespace,
        name: owner.name,
        body: options.dryRun
          ? [{ op: 'replace', path: '/spec/valuesContent', value: next }]
          : [
              ...precondition,
              { op: 'test', path: '/spec/valuesContent', value: old },
              { op: 'replace', path: '/spec/valuesContent', value: next },
              ...(options.also ?? []),
            ],
        ...(options.dryRun ? { dryRun: 'All' } : {}),
      },
      jsonPatch,
    ),
  );
}
