import type { CoordinationV1Api } from '@kubernetes/client-node';
import type { Registry } from 'prom-client';
import type { Clock } from './clock.js';
import type { Controller, ControllerSnapshot } from './Controller.js';
import { LeaderElector, type Runnable } from './LeaderElector.js';

/** An informer as the manager sees it: runs on every replica, so caches are warm when leadership arrives. */
export interface CacheSource {
  readonly name: string;
  start(): void;
  stop(): Promise<void>;
  waitForSync(): Promise<void>;
  hasSynced(): boolean;
}

export interface LeaderElectionConfig {
  coordination: CoordinationV1Api;
  namespace: string;
  /** Lease name. */
  name: string;
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
}

export interface ManagerOptions {
  /** Without it, this process is the only worker set and runs its controllers at once. */
  leaderElection?: LeaderElectionConfig;
  registry?: Registry;
  clock?: Clock;
  onError?(error: unknown): void;
}

export type ManagerPhase = 'new' | 'syncing' | 'running' | 'stopping' | 'stopped';

/**
 * The composition of the runtime (controller-runtime's Manager): informers run on every replica; controllers and
 * other leader-only runnables (job workers) run only while this replica holds the lease, and stop the moment it is
 * lost. `stop()` stops the leader-only work first, releases the lease, then stops the informers.
 */
export class Manager {
  private readonly caches: CacheSource[] = [];
  private readonly controllers: Controller[] = [];
  private readonly leaderOnly: Runnable[] = [];
  private readonly options: ManagerOptions;
  private elector: LeaderElector | undefined;
  private leaderRunning = false;
  phase: ManagerPhase = 'new';

  constructor(options: ManagerOptions = {}) {
    this.options = options;
  }

  addCache(cache: CacheSource): void {
    this.caches.push(cache);
  }

  addController(controller: Controller): void {
    this.controllers.push(controller);
    this.leaderOnly.push(controller);
  }

  /** Something else that must run only on the leader (e.g. a JobWorker). */
  addLeaderRunnable(runnable: Runnable): void {
    this.leaderOnly.push(runnable);
  }

  /** Starts the caches, waits until they have synced, then campaigns (or starts the controllers directly). */
  async start(): Promise<void> {
    if (this.phase !== 'new') return;
    this.phase = 'syncing';
    for (const c of this.caches) c.start();
    await Promise.all(this.caches.map((c) => c.waitForSync()));
    if (this.phase !== 'syncing') return; // stopped meanwhile
    this.phase = 'running';
    const le = this.options.leaderElection;
    if (!le) {
      this.startLeaderWork();
      return;
    }
    this.elector = new LeaderElector({
      ...le,
      clock: this.options.clock,
      registry: this.options.registry,
      onError: this.options.onError,
      onStartedLeading: () => this.startLeaderWork(),
      onStoppedLeading: () => this.stopLeaderWork(),
    });
    this.elector.start();
  }

  async stop(): Promise<void> {
    if (this.phase === 'stopped' || this.phase === 'stopping') return;
    this.phase = 'stopping';
    if (this.elector) await this.elector.stop(); // stops leader work, then releases the lease
    await this.stopLeaderWork();
    await Promise.all(this.caches.map((c) => c.stop()));
    this.phase = 'stopped';
  }

  /** True when this replica runs the controllers (always, without leader election, once started). */
  isLeader(): boolean {
    return this.leaderRunning;
  }

  cachesSynced(): boolean {
    return this.caches.every((c) => c.hasSynced());
  }

  /** Every controller's queue state, for the GraphQL `controllers` query. */
  snapshot(): ControllerSnapshot[] {
    return this.controllers.map((c) => c.snapshot());
  }

  private startLeaderWork(): void {
    if (this.leaderRunning || this.phase !== 'running') return;
    this.leaderRunning = true;
    for (const r of this.leaderOnly) r.start();
  }

  private async stopLeaderWork(): Promise<void> {
    if (!this.leaderRunning) return;
    this.leaderRunning = false;
    await Promise.all(this.leaderOnly.map((r) => r.stop()));
  }
}
