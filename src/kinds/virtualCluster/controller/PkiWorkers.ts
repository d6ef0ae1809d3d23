/**
 * Cluster PKI generation on a worker thread. The ASN.1 work is pure JavaScript (~18 ms of CPU per cluster with ECDSA
 * keys) and RSA-2048 key generation, upstream's default, costs far more (~1 s of CPU per cluster for six keys on the
 * busy 2-core bench machine, ADR 0018): on the main thread either would stall the event loop that also serves the API
 * and every other reconciler.
 *
 * One worker (the service runs on small machines; the event loop it frees is the point, not parallel PKI). Requests
 * are handled one at a time, in the order they were made. The worker starts on the first request, is unref()ed while
 * idle so it never keeps the process alive, and is replaced by a new one on the next request after it exits.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { UnavailableError } from '../../../errors.js';
import type { ClusterPki, ClusterPkiInput, PkiOptions } from './pki.js';
import type { PkiRequest, PkiResponse } from './pkiWorker.js';

export type IssuePki = (input: ClusterPkiInput, options?: PkiOptions) => Promise<ClusterPki>;

interface Pending {
  resolve(pki: ClusterPki): void;
  reject(error: Error): void;
}

/**
 * The worker entry file next to this module, with this module's extension: .js when compiled, .ts under tsx or vitest.
 * A .ts worker needs tsx's loader, and `--import tsx` is not enough: Node 20 does not apply a worker's execArgv loader
 * flags to it (nodejs/node#47747), tsx does not register itself in worker threads before Node 22.22.3, and vitest's
 * workers carry no tsx flag at all. So the worker preloads a module that calls tsx's register() API; resolved from
 * here, it does not depend on the working directory.
 */
function workerEntry(): { url: URL; execArgv?: string[] } {
  const ext = path.extname(fileURLToPath(import.meta.url));
  const url = new URL(`./pkiWorker${ext}`, import.meta.url);
  if (ext !== '.ts') return { url };
  const preload = `import { register } from ${JSON.stringify(import.meta.resolve('tsx/esm/api'))}; register();`;
  return { url, execArgv: ['--import', `data:text/javascript,${encodeURIComponent(preload)}`] };
}

export class PkiWorkers {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;

  /** generateClusterPki on the worker; an error thrown there rejects with its message, a worker exit with an UnavailableError (retriable). */
  readonly issue: IssuePki = (input, options = {}) =>
    new Promise<ClusterPki>((resolve, reject) => {
      const worker = this.worker ?? this.start();
      const id = this.nextId++;
      const request: PkiRequest = { id, input, options };
      worker.postMessage(request);
      this.pending.set(id, { resolve, reject });
      // While a request is out the process waits for it, as it would for the same work on libuv's thread pool.
      worker.ref();
    });

  /** Terminates the worker; requests still pending reject. A later request starts a new worker. */
  async close(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    this.detach(worker, new UnavailableError('the PKI worker was closed'));
    await worker.terminate();
  }

  private start(): Worker {
    const { url, execArgv } = workerEntry();
    const worker = new Worker(url, execArgv ? { execArgv } : {});
    worker.unref();
    worker.on('message', (response: PkiResponse) => this.settle(worker, response));
    worker.on('error', (error) => this.detach(worker, new UnavailableError(`the PKI worker failed: ${error.message}`, { cause: error })));
    worker.on('exit', (code) => this.detach(worker, new UnavailableError(`the PKI worker exited with code ${code}`)));
    this.worker = worker;
    return worker;
  }

  private settle(worker: Worker, response: PkiResponse): void {
    const pending = this.pending.get(response.id);
    if (!pending) return;
    this.pending.delete(response.id);
    if (this.pending.size === 0) worker.unref();
    if ('pki' in response) pending.resolve(response.pki);
    else pending.reject(new Error(response.error));
  }

  /** Forgets `worker` (if it is still the current one) and rejects everything it was asked to do. */
  private detach(worker: Worker, error: Error): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const request of pending) request.reject(error);
  }
}

/**
 * The process's PKI worker, the default of every VirtualClusterReconciler. Nothing closes it, on purpose: no shutdown hook
 * reaches the rollout kinds (ControllerHost has none, and the app's cleanups see only the manager), and unref()ed while
 * idle it never holds the process open. Shared, repeated set-ups (a manager restart, tests) still make one thread.
 */
export const sharedPkiWorkers = new PkiWorkers();
