import type { KubeObject } from '../types.js';

const str = { type: 'string' };
const strings = { type: 'array', items: str };

/**
 * VirtualCluster (tenancy.x-k8s.io/v1alpha1) as cluster-api-provider-nested's config/crd installs it
 * (../shared/upstream/virtualclusters.tenancy.x-k8s.io.yaml): no status subresource, so status is written with the
 * object; its conditions have no `type`.
 */
export const VIRTUAL_CLUSTER_CRD: KubeObject = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'virtualclusters.tenancy.x-k8s.io' },
  spec: {
    group: 'tenancy.x-k8s.io',
    names: { kind: 'VirtualCluster', listKind: 'VirtualClusterList', plural: 'virtualclusters', shortNames: ['vc'], singular: 'virtualcluster' },
    scope: 'Namespaced',
    versions: [
      {
        name: 'v1alpha1',
        served: true,
        storage: true,
        additionalPrinterColumns: [
          { jsonPath: '.metadata.creationTimestamp', name: 'Age', type: 'date' },
          { jsonPath: '.status.phase', name: 'Phase', type: 'string' },
          { jsonPath: '.spec.clusterVersionName', name: 'ClusterVersion', type: 'string' },
          { jsonPath: '.status.clusterNamespace', name: 'ClusterNamespace', priority: 1, type: 'string' },
        ],
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              apiVersion: str,
              kind: str,
              metadata: { type: 'object' },
              spec: {
                type: 'object',
                required: ['clusterVersionName'],
                properties: {
                  clusterDomain: str,
                  clusterVersionName: str,
                  opaqueMetaPrefixes: strings,
                  pkiExpireDays: { type: 'integer', format: 'int64' },
                  serviceCidr: str,
                  transparentMetaPrefixes: strings,
                },
              },
              status: {
                type: 'object',
                required: ['phase'],
                properties: {
                  clusterNamespace: str,
                  conditions: {
                    type: 'array',
                    items: {
                      type: 'object',
                      required: ['status'],
                      properties: { lastTransitionTime: { type: 'string', format: 'date-time' }, message: str, reason: str, status: str },
                    },
                  },
                  message: str,
                  phase: str,
                  reason: str,
                },
              },
            },
          },
        },
      },
    ],
  },
};

/**
 * ClusterVersion (tenancy.x-k8s.io/v1alpha1, cluster-scoped) as upstream installs it: a schema that preserves unknown
 * fields, so the API accepts anything (../shared/upstream/clusterversions.tenancy.x-k8s.io.yaml).
 */
export const CLUSTER_VERSION_CRD: KubeObject = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'clusterversions.tenancy.x-k8s.io' },
  spec: {
    group: 'tenancy.x-k8s.io',
    names: { kind: 'ClusterVersion', listKind: 'ClusterVersionList', plural: 'clusterversions', shortNames: ['cv'], singular: 'clusterversion' },
    scope: 'Cluster',
    versions: [
      {
        name: 'v1alpha1',
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    ],
  },
};
