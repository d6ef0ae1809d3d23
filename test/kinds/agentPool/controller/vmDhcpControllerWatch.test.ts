import type { V1Deployment } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { Informer } from '../../../../src/controller/Informer.js';
import { AGENT_MODE_MISMATCH, resolveAgentMode } from '../../../../src/kinds/agentPool/controller/mode.js';
import { normalizeImage, VmDhcpControllerWatch } from '../../../../src/kinds/agentPool/controller/VmDhcpControllerWatch.js';
import { AppError } from '../../../../src/errors.js';
import { vmDhcpControllerDeployment } from '../../../../src/sim/behaviour/upstream/vmDhcpChart.js';

/** Just the two reads the watch makes of its informer. */
function informerOf(deployments: V1Deployment[]): Informer<V1Deployment> {
  return {
    list: () => deployments,
    get: (namespace: string | undefined, name: string) => deployments.find((d) => d.metadata?.namespace === namespace && d.metadata?.name === name),
  } as unknown as Informer<V1Deployment>;
}

const chart = (options: Parameters<typeof vmDhcpControllerDeployment>[0] = {}) => vmDhcpControllerDeployment(options) as V1Deployment;

describe('VmDhcpControllerWatch', () => {
  it('reads the chart-shaped Deployment: agents with its --image, --no-agent, scaled to 0, absent', () => {
    expect(new VmDhcpControllerWatch(informerOf([chart({ agentImage: 'repo/agent:v1' })])).state()).toEqual({
      kind: 'agents',
      ref: 'harvester-system/harvester-vm-dhcp-controller',
      image: 'repo/agent:v1',
      container: 'harvester-vm-dhcp-controller',
      agentNamespace: 'harvester-system',
      version: 'v0.3.0', // the controller's own image tag: its release
    });
    expect(new VmDhcpControllerWatch(informerOf([chart({ noAgent: true })])).state()).toMatchObject({
      kind: 'no-agent',
      detail: expect.stringContaining('--no-agent'),
    });
    const scaled = chart();
    scaled.spec!.replicas = 0;
    expect(new VmDhcpControllerWatch(informerOf([scaled])).state()).toMatchObject({ kind: 'no-agent', detail: expect.stringContaining('scaled to 0') });
    expect(new VmDhcpControllerWatch(informerOf([])).state()).toMatchObject({ kind: 'absent' });
  });

  it('accepts --image=value and an untagged image as upstream prints it (:latest)', () => {
    const d = chart();
    const args = d.spec!.template.spec!.containers[0]!.args!;
    const i = args.indexOf('--image');
    args.splice(i, 2, '--image=registry:5000/agent');
    expect(new VmDhcpControllerWatch(informerOf([d])).state()).toMatchObject({ kind: 'agents', image: 'registry:5000/agent:latest' });
    expect(normalizeImage('repo/agent:v2')).toBe('repo/agent:v2');
  });

  it('refuses to guess: two labelled controllers, or one without --image', () => {
    const other = chart({ namespace: 'other' });
    expect(new VmDhcpControllerWatch(informerOf([chart(), other])).state()).toMatchObject({
      kind: 'unusable',
      detail: expect.stringContaining('ROLLPLANE_VMDHCP_CONTROLLER'),
    });
    // Configured by name, the other one does not matter.
    expect(new VmDhcpControllerWatch(informerOf([chart(), other]), { namespace: 'other', name: 'harvester-vm-dhcp-controller' }).state()).toMatchObject({
      kind: 'agents',
      ref: 'other/harvester-vm-dhcp-controller',
    });
    const bare = chart();
    bare.spec!.template.spec!.containers[0]!.args = ['--name', 'x'];
    expect(new VmDhcpControllerWatch(informerOf([bare])).state()).toMatchObject({ kind: 'unusable', detail: expect.stringContaining('no --image') });
    expect(new VmDhcpControllerWatch(informerOf([chart()]), { namespace: 'harvester-system', name: 'missing' }).state()).toMatchObject({
      kind: 'absent',
      detail: expect.stringContaining('harvester-system/missing'),
    });
  });
});

describe('resolveAgentMode', () => {
  const agents = { kind: 'agents', ref: 'ns/c', image: 'a:1', container: 'c' } as const;
  const noAgent = { kind: 'no-agent', ref: 'ns/c', detail: 'ns/c runs with --no-agent' } as const;
  const absent = { kind: 'absent', detail: 'none' } as const;
  const unusable = { kind: 'unusable', ref: 'ns/c', detail: 'ns/c has no --image argument' } as const;

  it('coexists beside a controller that deploys agents and goes direct without one', () => {
    expect(resolveAgentMode('auto', agents)).toBe('coexist');
    expect(resolveAgentMode('coexist', agents)).toBe('coexist');
    expect(resolveAgentMode('auto', noAgent)).toBe('direct');
    expect(resolveAgentMode('auto', absent)).toBe('direct');
    expect(resolveAgentMode('direct', absent)).toBe('direct');
  });

  it('refuses a controller whose agents run outside the namespace rollplane watches', () => {
    const result = resolveAgentMode('auto', { ...agents, agentNamespace: 'vm-dhcp' }, 'harvester-system');
    expect(result).toBeInstanceOf(AppError);
    expect((result as AppError).message).toContain('ROLLPLANE_AGENT_NAMESPACE=vm-dhcp');
    expect(resolveAgentMode('auto', { ...agents, agentNamespace: 'harvester-system' }, 'harvester-system')).toBe('coexist');
  });

  it('refuses with CONFLICT and reason AGENT_MODE_MISMATCH instead of racing', () => {
    for (const [mode, state] of [
      ['direct', agents],
      ['coexist', noAgent],
      ['coexist', absent],
      ['auto', unusable],
      ['direct', unusable],
    ] as const) {
      const result = resolveAgentMode(mode, state);
      expect(result, `${mode} / ${state.kind}`).toBeInstanceOf(AppError);
      expect((result as AppError).code).toBe('CONFLICT');
      expect((result as AppError).details).toMatchObject({ reason: AGENT_MODE_MISMATCH, controllerState: state.kind });
    }
  });
});
