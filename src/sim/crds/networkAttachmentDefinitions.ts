import type { KubeObject } from '../types.js';

/**
 * NetworkAttachmentDefinition (k8s.cni.cncf.io/v1) as the Multus project installs it
 * (k8snetworkplumbingwg/multus-cni, deployments/multus-daemonset.yml): `spec.config` is the CNI configuration as a
 * JSON string; no field preserves unknown fields, so anything else in `spec` is pruned.
 */
export const NETWORK_ATTACHMENT_DEFINITION_CRD: KubeObject = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'network-attachment-definitions.k8s.cni.cncf.io' },
  spec: {
    group: 'k8s.cni.cncf.io',
    scope: 'Namespaced',
    names: {
      plural: 'network-attachment-definitions',
      singular: 'network-attachment-definition',
      kind: 'NetworkAttachmentDefinition',
      shortNames: ['nad', 'net-attach-def'],
    },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              apiVersion: { type: 'string' },
              kind: { type: 'string' },
              metadata: { type: 'object' },
              spec: { type: 'object', properties: { config: { type: 'string' } } },
            },
          },
        },
      },
    ],
  },
};
