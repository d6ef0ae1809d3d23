/**
 * Attack 18, H2 and H3: writes to rollplane's own cluster whose answer never comes.
 * - H2: the write of the controller's --image timed out, the rollout gave up and took its holds off, and the write —
 *   delayed in a proxy, not lost — landed twelve seconds later: upstream moved every pool at once, beyond
 *   maxUnavailable, for a rollout that was over. Now the write lands only on the version of the Deployment it read, and
 *   a write whose answer was lost is fenced off (or found landed) before any hold comes off.
 * - H3: writes to `local` had no timeout: one hold write that hung kept its rollout PENDING for ever, and every
 *   agent-pool bump behind it (prepares run one at a time).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { type IncomingMessage, request } from 'node:http';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ANNOTATION_IMAGE_WRITE_FENCE } from '../../../src/kinds/agentPool/controller/ImageWriteFence.js';
import { ANNOTATION_HELD_BY } from '../../../src/kinds/agentPool/controller/names.js';
import type { ApiRequestInfo, KubeObject } from '../../../src/sim/types.js';
import { startService } from '../../helpers/child.js';
import { finishedRollout } from '../../helpers/crashPoint.js';
import { gqlData } from '../../helpers/graphql.js';
import { type MemberProxy, startMemberProxy } from '../../helpers/memberProxy.js';
import { until } from '../../helpers/until.js';
import { BUMP, CONTROLLER, NEW, OLD, ROLLOUT, type Rig, rigPerTest, serviceEnv, startRig } from './rig.js';

const t = rigPerTest();
const POOLS = 4;
/** Short, so that a lost answer is given up on soon; far longer than any answer of the simulator on a loaded machine. */
const TIMEOUT_MS = '2000';
const ABORT = 'mutation ($id: ID!) { abortRollout(id: $id) { state } }';
const STATE = 'query ($id: ID!) { rollout(id: $id) { state } }';

function controller(r: Rig): KubeObject {
  const type = r.sim.store.resourceType('apps', 'deployments')!;
  return r.sim.store.get(type, CONTROLLER.namespace, CONTROLLER.name) as KubeObject;
}

function controllerImage(r: Rig): string {
  const args: string[] = controller(r).spec.template.spec.containers[0].args;
  return args[args.indexOf('--image') + 1]!;
}

function heldPools(r: Rig): string[] {
  return Array.from({ length: POOLS }, (_, i) => `net-${i + 1}`).filter((name) => r.pool(name)?.metadata.annotations?.[ANNOTATION_HELD_BY] !== undefined);
}

/** A copy of the simulator's kubeconfig that reaches it through `proxy`. */
function kubeconfigThrough(r: Rig, proxy: MemberProxy): string {
  const file = path.join(path.dirname(r.databaseFile), 'kubeconfig-through-proxy');
  writeFileSync(file, readFileSync(r.sim.kubeconfigPath, 'utf8').split(r.sim.url).join(proxy.url));
  return file;
}

describe('a write to the local cluster whose answer is lost', () => {
  it('the --image write delayed past its timeout never lands after the rollout gave up, and no pool moves', async () => {
    t.rig = await startRig({ fleet: `pools=${POOLS},nodes=2,upstream=vm-dhcp`, delays: { podReadyMs: 100, podTerminateMs: 20 }, noApp: true });
    const r = t.rig;
    // The proxy keeps the first --image write (a JSON patch of the controller's Deployment) and delivers it only when
    // told, whole, to the simulator: the request was sent, its answer never reached rollplane.
    let delayed: { method: string; url: string; headers: IncomingMessage['headers']; body: Buffer } | undefined;
    const deployment = `/apis/apps/v1/namespaces/${CONTROLLER.namespace}/deployments/${CONTROLLER.name}`;
    const proxy = await startMemberProxy(r.sim.url, {
      intercept(req) {
        const imageWrite =
          req.method === 'PATCH' && req.url?.split('?')[0] === deployment && !req.url.includes('dryRun') && req.headers['content-type']?.includes('json-patch');
        if (!imageWrite || delayed) return false;
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          delayed = { method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks) };
        });
        return true; // never answered
      },
    });
    const deliver = () =>
      new Promise<number>((resolve, reject) => {
        const { method, url, headers, body } = delayed!;
        const late = request(`${r.sim.url}${url}`, { method, headers }, (answer) => {
          answer.resume();
          resolve(answer.statusCode ?? 0);
        });
        late.on('error', reject);
        late.end(body);
      });
    try {
      const env = { ...serviceEnv(r), KUBECONFIG: kubeconfigThrough(r, proxy), ROLLPLANE_KUBE_TIMEOUT_MS: TIMEOUT_MS };
      const service = await startService(env);
      t.service = service;
      const bump = await gqlData(service.url, BUMP, { input: { image: NEW, strategy: { maxUnavailable: '1', progressDeadlineSeconds: 3600 } } });
      const id: string = bump.bumpAgentImage.rollout.id;
      await until('the --image write sent, its answer kept back', () => delayed !== undefined);
      expect(heldPools(r)).toHaveLength(POOLS);
      expect((await gqlData(service.url, ABORT, { id })).abortRollout.state).toBe('ABORTED');
      await until('the ended rollout took its holds off', () => heldPools(r).length === 0);
      // Its answer lost, the write was fenced off before any hold came off: a change of the Deployment since it was read.
      expect(controller(r).metadata.annotations?.[ANNOTATION_IMAGE_WRITE_FENCE]).toMatch(new RegExp(`^${id} `));
      const delivered = await deliver();
      // The write reaches the API server after all: on a Deployment changed since it was read, it is refused.
      expect(delivered).toBe(409);
      expect(controllerImage(r)).toBe(OLD);
      for (let i = 1; i <= POOLS; i++) expect(r.agent(`net-${i}`)?.spec.containers[0].image, `net-${i}`).toBe(OLD);
      expect((await gqlData(service.url, STATE, { id })).rollout.state).toBe('ABORTED');
    } finally {
      await proxy.close();
    }
  }, 120_000);

  it('a hold write that hangs is given up after its timeout: the rollout can be aborted, and the next bump runs', async () => {
    t.rig = await startRig({ fleet: `pools=${POOLS},nodes=2,upstream=vm-dhcp`, delays: { podReadyMs: 100, podTerminateMs: 20 }, noApp: true });
    const r = t.rig;
    // The first stored IPPool patch (a hold) never gets an answer while the test runs.
    let hung = 0;
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const before = r.sim.api.hooks.beforeRequest;
    r.sim.api.hooks = {
      ...r.sim.api.hooks,
      beforeRequest: async (info: ApiRequestInfo) => {
        await before?.(info);
        if (info.verb === 'patch' && info.resource.plural === 'ippools' && !info.dryRun && hung++ === 0) await released;
      },
    };
    try {
      const service = await startService({ ...serviceEnv(r), ROLLPLANE_KUBE_TIMEOUT_MS: TIMEOUT_MS });
      t.service = service;
      const first = await gqlData(service.url, BUMP, { input: { image: NEW, strategy: { maxUnavailable: '1', progressDeadlineSeconds: 3600 } } });
      const stuck: string = first.bumpAgentImage.rollout.id;
      await until('a hold write hung', () => hung >= 1);
      expect((await gqlData(service.url, ABORT, { id: stuck })).abortRollout.state).toBe('ABORTED');
      const NEWER = 'rancher/harvester-vm-dhcp-agent:v0.3.3';
      const next = await gqlData(service.url, BUMP, { input: { image: NEWER, strategy: { maxUnavailable: '2', progressDeadlineSeconds: 3600 } } });
      const done = await finishedRollout<{ state: string; message: string }>(service.url, next.bumpAgentImage.rollout.id, ROLLOUT, 90_000);
      expect(done.state, done.message).toBe('SUCCEEDED');
      expect(controllerImage(r)).toBe(NEWER);
      // The hung write is still hung: the bump did not wait for it.
      expect(hung).toBeGreaterThan(1);
    } finally {
      release();
    }
  }, 120_000);
});
