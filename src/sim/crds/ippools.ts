import type { KubeObject } from '../types.js';

const str = { type: 'string' };
const ipv4 = { type: 'string', format: 'ipv4' };
const immutable = (message: string) => [{ rule: 'self == oldSelf', message }];

/**
 * IPPool (network.harvesterhci.io/v1alpha1), field for field the schema that harvester/vm-dhcp-controller's chart
 * installs (../shared/upstream/ippools.network.harvesterhci.io.yaml; descriptions left out). Its status declares only
 * agentPodRef, conditions, ipv4 and lastUpdate: anything else written to status is pruned.
 */
export const IPPOOL_CRD: KubeObject = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'ippools.network.harvesterhci.io' },
  spec: {
    group: 'network.harvesterhci.io',
    names: { kind: 'IPPool', listKind: 'IPPoolList', plural: 'ippools', shortNames: ['ippl', 'ippls'], singular: 'ippool' },
    scope: 'Namespaced',
    versions: [
      {
        name: 'v1alpha1',
        served: true,
        storage: true,
        subresources: { status: {} },
        additionalPrinterColumns: [
          { jsonPath: '.spec.networkName', name: 'NETWORK', type: 'string' },
          { jsonPath: '.status.ipv4.available', name: 'AVAILABLE', type: 'integer' },
          { jsonPath: '.status.ipv4.used', name: 'USED', type: 'integer' },
          { jsonPath: ".status.conditions[?(@.type=='Registered')].status", name: 'REGISTERED', type: 'string' },
          { jsonPath: ".status.conditions[?(@.type=='CacheReady')].status", name: 'CACHEREADY', type: 'string' },
          { jsonPath: ".status.conditions[?(@.type=='AgentReady')].status", name: 'AGENTREADY', type: 'string' },
          { jsonPath: '.metadata.creationTimestamp', name: 'AGE', type: 'date' },
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
                required: ['networkName'],
                properties: {
                  ipv4Config: {
                    type: 'object',
                    required: ['cidr', 'pool', 'serverIP'],
                    'x-kubernetes-validations': [{ rule: '!has(oldSelf.router) || has(self.router)', message: 'Router is required once set' }],
                    properties: {
                      cidr: { ...str, 'x-kubernetes-validations': immutable('CIDR is immutable') },
                      dns: { type: 'array', format: 'ipv4', maxItems: 3, items: str },
                      domainName: str,
                      domainSearch: { type: 'array', items: str },
                      leaseTime: { type: 'integer' },
                      ntp: { type: 'array', maxItems: 4, items: str },
                      pool: {
                        type: 'object',
                        required: ['end', 'start'],
                        'x-kubernetes-validations': [{ rule: '!has(oldSelf.exclude) || has(self.exclude)', message: 'End is required once set' }],
                        properties: {
                          end: { ...ipv4, 'x-kubernetes-validations': immutable('End is immutable') },
                          exclude: { type: 'array', format: 'ipv4', items: str, 'x-kubernetes-validations': immutable('Exclude is immutable') },
                          start: { ...ipv4, 'x-kubernetes-validations': immutable('Start is immutable') },
                        },
                      },
                      router: { ...ipv4, 'x-kubernetes-validations': immutable('Router is immutable') },
                      serverIP: { ...ipv4, 'x-kubernetes-validations': immutable('ServerIP is immutable') },
                    },
                  },
                  networkName: { type: 'string', maxLength: 64, 'x-kubernetes-validations': immutable('NetworkName is immutable') },
                  paused: { type: 'boolean' },
                },
              },
              status: {
                type: 'object',
                properties: {
                  agentPodRef: { type: 'object', properties: { image: str, name: str, namespace: str, uid: str } },
                  conditions: {
                    type: 'array',
                    items: {
                      type: 'object',
                      required: ['status', 'type'],
                      properties: { lastTransitionTime: str, lastUpdateTime: str, message: str, reason: str, status: str, type: str },
                    },
                  },
                  ipv4: {
                    type: 'object',
                    required: ['available', 'used'],
                    properties: {
                      allocated: { type: 'object', additionalProperties: str },
                      available: { type: 'integer' },
                      used: { type: 'integer' },
                    },
                  },
                  lastUpdate: { type: 'string', format: 'date-time' },
                },
              },
            },
          },
        },
      },
    ],
  },
};
