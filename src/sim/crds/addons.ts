import type { KubeObject } from '../types.js';

/**
 * Harvester's Addon (harvesterhci.io/v1beta1) as harvester/harvester installs it
 * (`deploy/charts/harvester-crd/templates/harvesterhci.io_addons.yaml`, descriptions left out): Harvester installs
 * optional charts through it — the vm-dhcp-controller as the Addon `harvester-system/harvester-vm-dhcp-controller`
 * (harvester/experimental-addons) — and its add-on controller renders the chart from `spec.valuesContent`. Not one of
 * rollplane's target CRDs: installed only where the fleet installs the vm-dhcp-controller as an add-on.
 */
export const ADDON_CRD: KubeObject = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'addons.harvesterhci.io' },
  spec: {
    group: 'harvesterhci.io',
    scope: 'Namespaced',
    names: { kind: 'Addon', listKind: 'AddonList', plural: 'addons', singular: 'addon' },
    versions: [
      {
        name: 'v1beta1',
        served: true,
        storage: true,
        subresources: { status: {} },
        additionalPrinterColumns: [
          { jsonPath: '.spec.repo', name: 'HelmRepo', type: 'string' },
          { jsonPath: '.spec.chart', name: 'ChartName', type: 'string' },
          { jsonPath: '.spec.enabled', name: 'Enabled', type: 'boolean' },
        ],
        schema: {
          openAPIV3Schema: {
            type: 'object',
            required: ['spec'],
            properties: {
              apiVersion: { type: 'string' },
              kind: { type: 'string' },
              metadata: { type: 'object' },
              spec: {
                type: 'object',
                required: ['chart', 'enabled', 'repo', 'valuesContent', 'version'],
                properties: {
                  chart: { type: 'string' },
                  enabled: { type: 'boolean' },
                  repo: { type: 'string' },
                  valuesContent: { type: 'string' },
                  version: { type: 'string' },
                },
              },
              status: {
                type: 'object',
                properties: {
                  conditions: {
                    type: 'array',
                    items: {
                      type: 'object',
                      required: ['status', 'type'],
                      properties: {
                        lastTransitionTime: { type: 'string' },
                        lastUpdateTime: { type: 'string' },
                        message: { type: 'string' },
                        reason: { type: 'string' },
                        status: { type: 'string' },
                        type: { type: 'string' },
                      },
                    },
                  },
                  status: { type: 'string' },
                },
              },
            },
          },
        },
      },
    ],
  },
};
