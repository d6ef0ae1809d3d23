import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../../src/sim/index.js';
import { describeWithUpstream, schemaShape, UPSTREAM_CRD_NAMES, upstreamCrd, upstreamCrds } from '../../helpers/upstreamCrds.js';

let sim: Simulator;

async function getJson(path: string): Promise<any> {
  const response = await fetch(sim.url + path);
  expect(response.status).toBe(200);
  return response.json();
}

/** What of a CRD the API server acts on: names, scope, and per version its schema shape, subresources and columns. */
function servingShape(crd: any): unknown {
  return {
    group: crd.spec.group,
    scope: crd.spec.scope,
    names: {
      kind: crd.spec.names.kind,
      listKind: crd.spec.names.listKind,
      plural: crd.spec.names.plural,
      singular: crd.spec.names.singular,
      shortNames: crd.spec.names.shortNames ?? [],
    },
    versions: crd.spec.versions.map((v: any) => ({
      name: v.name,
      served: v.served,
      storage: v.storage,
      subresources: v.subresources ?? {},
      additionalPrinterColumns: v.additionalPrinterColumns ?? [],
      schema: schemaShape(v.schema?.openAPIV3Schema),
    })),
  };
}

beforeAll(async () => {
  sim = await startSimulator({ behaviour: false });
});

afterAll(async () => {
  await sim?.stop();
});

// The files are read inside the tests, never while they are collected: without ../shared the block is skipped (or fails
// under CI) instead of the whole file failing.
describeWithUpstream('the CRDs the simulator installs match the upstream ones (../shared/upstream)', () => {
  it('finds the three upstream CRDs', () => {
    expect(
      upstreamCrds()
        .map((u) => u.crd.metadata.name)
        .sort(),
    ).toEqual([...UPSTREAM_CRD_NAMES]);
  });

  it.each(UPSTREAM_CRD_NAMES)('%s: same names, scope, versions, subresources, columns and schema shape, read back through the API', async (name) => {
    const served = await getJson(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
    expect(servingShape(served)).toEqual(servingShape(upstreamCrd(name).crd));
  });

  it.each(UPSTREAM_CRD_NAMES)('%s: the OpenAPI v3 document kubectl reads carries the same schema shape', async (name) => {
    const u = upstreamCrd(name);
    const { group, names } = u.crd.spec;
    const version = u.crd.spec.versions.find((v: any) => v.storage);
    const doc = await getJson(`/openapi/v3/apis/${group}/${version.name}`);
    const key = `${group.split('.').reverse().join('.')}.${version.name}.${names.kind}`;
    const { 'x-kubernetes-group-version-kind': gvk, ...schema } = doc.components.schemas[key];
    expect(gvk).toEqual([{ group, version: version.name, kind: names.kind }]);
    expect(schemaShape(schema)).toEqual(schemaShape(version.schema.openAPIV3Schema));
  });

  it('tells a difference in shape apart (the comparison can fail)', () => {
    const ippool = upstreamCrd('ippools.network.harvesterhci.io').crd;
    const altered = structuredClone(ippool);
    altered.spec.versions[0].schema.openAPIV3Schema.properties.status.properties.agentDeploymentRef = {
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': true,
    };
    expect(servingShape(altered)).not.toEqual(servingShape(ippool));
  });
});

describe('the CRDs the simulator installs that are not in ../shared/upstream', () => {
  it('serves NetworkAttachmentDefinition as the Multus project defines it: spec.config a string, nothing preserved', async () => {
    const served = await getJson('/apis/apiextensions.k8s.io/v1/customresourcedefinitions/network-attachment-definitions.k8s.cni.cncf.io');
    expect(served.spec).toMatchObject({
      group: 'k8s.cni.cncf.io',
      scope: 'Namespaced',
      names: {
        kind: 'NetworkAttachmentDefinition',
        plural: 'network-attachment-definitions',
        singular: 'network-attachment-definition',
        shortNames: ['nad', 'net-attach-def'],
      },
    });
    expect(schemaShape(served.spec.versions[0].schema.openAPIV3Schema)).toEqual({
      properties: {
        apiVersion: { type: 'string' },
        kind: { type: 'string' },
        metadata: { type: 'object' },
        spec: { properties: { config: { type: 'string' } }, type: 'object' },
      },
      type: 'object',
    });
  });
});
