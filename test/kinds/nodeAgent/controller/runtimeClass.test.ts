/**
 * The peer runtime class of a node-agent rollout comes from the agent's own configuration (the cloud-api-adaptor's
 * RUNTIMECLASS_NAME in peer-pods-cm, read as the kubelet builds the container's environment), and from rollplane's
 * settings only when the agent sets none. See docs/beside-upstream.md#node-agents-beside-the-cloud-api-adaptor.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { resolveEnv } from '../../../../src/kinds/nodeAgent/controller/agentEnv.js';
import { ErrorCode } from '../../../../src/errors.js';
import type { KubeObject } from '../../../../src/sim/types.js';
import { DS_NS, startHarness, type Harness } from './harness.js';
import { nodeAgentStrategyOf } from '../../../../src/kinds/nodeAgent/plan.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('agent environment', () => {
  const maps: Record<string, Record<string, string>> = {
    first: { RUNTIMECLASS_NAME: 'from-first' },
    second: { RUNTIMECLASS_NAME: 'from-second' },
    prefixed: { NAME: 'from-prefixed' },
    empty: { RUNTIMECLASS_NAME: '' },
  };
  const read = async (_ns: string, name: string) => maps[name];
  const resolve = (container: object) => resolveEnv({ name: 'c', ...container }, 'ns', 'RUNTIMECLASS_NAME', read);

  it('takes env over envFrom, the last envFrom source holding the key, prefixes, and treats empty as unset', async () => {
    expect(await resolve({ envFrom: [{ configMapRef: { name: 'first' } }, { configMapRef: { name: 'second' } }] })).toEqual({
      value: 'from-second',
      source: 'ConfigMap ns/second key RUNTIMECLASS_NAME',
    });
    expect(await resolve({ envFrom: [{ configMapRef: { name: 'second' } }, { configMapRef: { name: 'missing' } }] })).toMatchObject({ value: 'from-second' });
    expect(await resolve({ env: [{ name: 'RUNTIMECLASS_NAME', value: 'literal' }], envFrom: [{ configMapRef: { name: 'first' } }] })).toMatchObject({
      value: 'literal',
    });
    expect(await resolve({ env: [{ name: 'RUNTIMECLASS_NAME', valueFrom: { configMapKeyRef: { name: 'prefixed', key: 'NAME' } } }] })).toMatchObject({
      value: 'from-prefixed',
    });
    expect(await resolve({ envFrom: [{ prefix: 'RUNTIMECLASS_', configMapRef: { name: 'prefixed' } }] })).toMatchObject({ value: 'from-prefixed' });
    // An empty value overrides earlier sources, and the CAA then uses its built-in default: rollplane falls back.
    expect(await resolve({ envFrom: [{ configMapRef: { name: 'first' } }, { configMapRef: { name: 'empty' } }] })).toBeUndefined();
    expect(await resolve({ envFrom: [{ configMapRef: { name: 'first' } }, { secretRef: { name: 'creds' } }] })).toMatchObject({
      value: 'from-first',
      caveat: expect.stringContaining('Secret creds'),
    });
    expect(await resolve({})).toBeUndefined();
  });
});

describe('peer runtime class beside the cloud-api-adaptor chart', () => {
  it('comes from peer-pods-cm RUNTIMECLASS_NAME, else from rollplane settings; a contradicting input is refused', async () => {
    h = await startHarness({ fleet: 'nodes=2,upstream=caa', nodeAgents: { peerRuntimeClass: 'kata-configured' } });
    const harness = h;
    const cms = harness.sim.store.resourceType('', 'configmaps')!;
    const setClass = (value: string | undefined) => {
      const cm = structuredClone(harness.sim.store.get(cms, DS_NS, 'peer-pods-cm')!) as KubeObject & { data: Record<string, string> };
      if (value === undefined) delete cm.data.RUNTIMECLASS_NAME;
      else cm.data.RUNTIMECLASS_NAME = value;
      harness.sim.store.update(cms, cm);
    };
    const planned = async (input: object = {}) => nodeAgentStrategyOf(await harness.bump({ dryRun: true, ...input })).peerRuntimeClass;

    // The chart's value (kata-remote) wins over rollplane's configured default.
    expect(await planned()).toBe('kata-remote');
    setClass('kata-qemu');
    expect(await planned()).toBe('kata-qemu');
    expect(await planned({ peerRuntimeClass: 'kata-qemu' })).toBe('kata-qemu');
    await expect(planned({ peerRuntimeClass: 'kata-clh' })).rejects.toMatchObject({
      code: ErrorCode.BadUserInput,
      message: expect.stringContaining('ConfigMap confidential-containers-system/peer-pods-cm key RUNTIMECLASS_NAME'),
    });
    // Unset (or empty, which the CAA treats as unset): rollplane's own setting.
    setClass(undefined);
    expect(await planned()).toBe('kata-configured');
    setClass('');
    expect(await planned()).toBe('kata-configured');
    expect(await planned({ peerRuntimeClass: 'kata-clh' })).toBe('kata-clh');
  });
});
