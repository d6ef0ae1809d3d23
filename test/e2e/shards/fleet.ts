import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { shardOf } from '../../../src/clusters/ShardLeases.js';
import { IPPOOL_GROUP, IPPOOL_PLURAL, IPPOOL_VERSION } from '../../../src/kinds/agentPool/controller/names.js';
import type { IPPool } from '../../../src/kinds/agentPool/controller/types.js';
import { createKubeClients, type KubeClients } from '../../../src/kube/createKubeClients.js';
import type { AuditRecord } from '../../../src/sim/api/ApiServer.js';
import { projectRoot, type ServiceProcess } from '../../helpers/child.js';
import { FAST_ENV } from '../agentPool/rig.js';
import { LEASE_ENV } from '../replicas.js';

/**
 * A fleet of simulated member clusters in a process of its own (fleetProcess.ts), registered with the replicas under
 * test through labelled Secrets in its management cluster, and what the multi-replica tests read of it: the
 * simulators' audit (every write, with the writer's identity and, for Leases, the holder after the write), pools, and
 * each replica's view of the members and of its shards.
 */
export interface Fleet {
  child: ChildProcess;
  adminUrl: string;
  kubeconfigs: Record<string, string>;
  kube: Map<string, KubeClients>;
  /** The members, `m-1` … `m-N`. */
  members: string[];
}

/** The replicas' leader Lease (ROLLPLANE_LEASE_NAME's default); shard Leases are `<it>-shard-<n>`. */
export const LEASE_NAME = 'rollplane-controller';

/** Starts `count` members `m-1` … `m-N`, each with the simulator fleet `spec` (e.g. `pools=2,nodes=1,peers=0`). */
export async function startFleet(count: number, spec: string): Promise<Fleet> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(projectRoot, 'test/e2e/shards/fleetProcess.ts'), String(count), spec], {
    cwd: projectRoot,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk) => {
      out += chunk;
      const end = out.indexOf('\n');
      if (end >= 0) resolve(out.slice(0, end));
    });
    child.once('exit', (code) => reject(new Error(`the fleet exited with ${code}`)));
  });
  const { adminUrl, kubeconfigs } = JSON.parse(line) as { adminUrl: string; kubeconfigs: Record<string, string> };
  const kube = new Map(
    Object.entries(kubeconfigs).map(([name, kubeconfigPath]) => [name, createKubeClients({ mode: 'kubeconfig', kubeconfigPath, qps: 1000, burst: 1000 })]),
  );
  return { child, adminUrl, kubeconfigs, kube, members: Array.from({ length: count }, (_, i) => `m-${i + 1}`) };
}

export async function stopFleet(fleet: Fleet | undefined): Promise<void> {
  if (!fleet) return;
  fleet.child.kill('SIGTERM');
  await new Promise((resolve) => fleet.child.once('exit', resolve));
}

/** Registers every member through a labelled Secret in the management cluster's `rollplane-system` (src/clusters/sources). */
export async function registerMembers(fleet: Fleet, labelsOf: (name: string) => Record<string, string> = () => ({})): Promise<void> {
  const mgmt = fleet.kube.get('mgmt')!;
  await mgmt.core.createNamespace({ body: { metadata: { name: 'rollplane-system' } } }).catch(() => undefined);
  for (const name of fleet.members) {
    await mgmt.core.createNamespacedSecret({
      namespace: 'rollplane-system',
      body: {
        metadata: {
          name: `member-${name}`,
          labels: { 'rollplane.io/member-cluster': 'true', tier: 'edge', ...labelsOf(name) },
          annotations: { 'rollplane.io/cluster-name': name },
        },
        stringData: { kubeconfig: readFileSync(fleet.kubeconfigs[name]!, 'utf8') },
      },
    });
  }
}

export async function audit(fleet: Fleet, cluster: string, after = 0): Promise<AuditRecord[]> {
  return (await fetch(`${fleet.adminUrl}/sim/clusters/${cluster}/audit?after=${after}`)).json() as Promise<AuditRecord[]>;
}

/** The last sequence number of the management cluster's audit: a starting point for `checkOneWriterPerCluster`. */
export async function auditMark(fleet: Fleet): Promise<number> {
  return Math.max(0, ...(await audit(fleet, 'mgmt')).map((r) => r.seq));
}

export async function pools(fleet: Fleet, cluster: string): Promise<IPPool[]> {
  const list = (await fleet.kube.get(cluster)!.custom.listClusterCustomObject({ group: IPPOOL_GROUP, version: IPPOOL_VERSION, plural: IPPOOL_PLURAL })) as {
    items: IPPool[];
  };
  return list.items;
}

/** The replica's `rollplane_shard_held` gauges: the shards it says it holds. */
export async function heldShards(service: ServiceProcess): Promise<number[]> {
  const text = await (await fetch(service.url.replace(/\/graphql$/, '/metrics'))).text();
  return [...text.matchAll(/^rollplane_shard_held\{shard="(\d+)"\} 1$/gm)].map((m) => Number(m[1])).sort((a, b) => a - b);
}

/** Whether every member is READY, serving agent pools, as the replica sees it. */
export async function seesMembers(service: ServiceProcess, members: readonly string[]): Promise<boolean> {
  const res = await fetch(service.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ clusters { name health { state } kinds } }' }),
  });
  const clusters = ((await res.json()) as { data?: { clusters: { name: string; health: { state: string }; kinds: string[] }[] } }).data?.clusters ?? [];
  return members.every((name) => clusters.some((c) => c.name === name && c.health.state === 'READY' && c.kinds.includes('AGENT_POOL')));
}

/**
 * The single-writer check: every write to a member (after `from`) is made by the replica that held the member's shard
 * Lease at that point of the sequence (the last write of that Lease before it, in the management cluster). Returns the
 * writers seen per member.
 */
export async function checkOneWriterPerCluster(fleet: Fleet, shards: number, from: number): Promise<Map<string, Set<string>>> {
  const leaseWrites = (await audit(fleet, 'mgmt'))
    .filter((r) => r.resource === 'leases' && r.name?.startsWith(`${LEASE_NAME}-shard-`))
    .map((r) => ({ seq: r.seq, shard: Number(r.name!.slice(`${LEASE_NAME}-shard-`.length)), holder: r.holder ?? '' }));
  const holderAt = (shard: number, seq: number) => leaseWrites.filter((w) => w.shard === shard && w.seq < seq).at(-1)?.holder ?? '';
  const writers = new Map<string, Set<string>>();
  const violations: string[] = [];
  for (const cluster of fleet.members) {
    const shard = shardOf(cluster, shards);
    for (const write of await audit(fleet, cluster, from)) {
      const writer = writerOf(write);
      const holder = holderAt(shard, write.seq);
      if (writer !== holder)
        violations.push(`${cluster} (shard ${shard}) #${write.seq} ${write.verb} ${write.resource}/${write.name} by ${writer}, held by ${holder || 'nobody'}`);
      writers.set(cluster, (writers.get(cluster) ?? new Set()).add(writer));
    }
  }
  expect(violations).toEqual([]);
  return writers;
}

/** The replica identity a request named (its User-Agent ends with `(<identity>)`). */
export function writerOf(write: AuditRecord): string {
  return /\(([^)]+)\)$/.exec(write.userAgent)?.[1] ?? write.userAgent;
}

/**
 * What a replica sharing the fleet runs with: the management cluster's kubeconfig, leader election and `shards` shard
 * Leases, and the database at `databaseUrl`.
 */
export function replicaEnv(fleet: Fleet, shards: number, databaseUrl: string): Record<string, string> {
  return {
    ...FAST_ENV,
    ...LEASE_ENV,
    // Longer than LEASE_ENV: 42 member runtimes starting on a loaded 2-core machine made holders miss a 2 s renew
    // deadline (safe, but the shards then moved back and forth).
    ROLLPLANE_LEASE_DURATION_MS: '6000',
    ROLLPLANE_LEASE_RENEW_DEADLINE_MS: '4000',
    ROLLPLANE_LEASE_RETRY_PERIOD_MS: '500',
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    ROLLPLANE_KUBE: 'kubeconfig',
    KUBECONFIG: fleet.kubeconfigs.mgmt!,
    ROLLPLANE_MEMBER_SHARDS: String(shards),
    ROLLPLANE_MEMBER_CLUSTER_SYNC_MS: '500',
    ROLLPLANE_MEMBER_CLUSTER_PROBE_MS: '2000',
    ROLLPLANE_MEMBER_CLUSTER_QPS: '200',
    ROLLPLANE_MEMBER_CLUSTER_BURST: '400',
  };
}

/** A test's cleanup: every replica resumed if stopped, killed, and waited for. */
export async function killReplicas(services: ServiceProcess[]): Promise<void> {
  for (const service of services.splice(0)) {
    if (service.child.exitCode === null && service.child.signalCode === null) {
      service.child.kill('SIGCONT');
      service.child.kill('SIGKILL');
    }
    await service.exited;
  }
}
