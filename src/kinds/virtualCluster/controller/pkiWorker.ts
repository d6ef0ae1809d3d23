/**
 * The worker thread behind PkiWorkers: runs generateClusterPki for each request, one at a time in arrival order, and
 * posts back the result or the error's message. Results are plain JSON, so structured cloning carries them as they are.
 */
import { parentPort } from 'node:worker_threads';
import { generateClusterPki, type ClusterPki, type ClusterPkiInput, type PkiOptions } from './pki.js';

export interface PkiRequest {
  id: number;
  input: ClusterPkiInput;
  options: PkiOptions;
}

export type PkiResponse = { id: number; pki: ClusterPki } | { id: number; error: string };

async function answer({ id, input, options }: PkiRequest): Promise<PkiResponse> {
  try {
    return { id, pki: await generateClusterPki(input, options) };
  } catch (error) {
    return { id, error: error instanceof Error ? error.message : String(error) };
  }
}

const port = parentPort;
if (!port) throw new Error('pkiWorker runs only as a worker thread (see PkiWorkers)');
let previous: Promise<unknown> = Promise.resolve();
port.on('message', (request: PkiRequest) => {
  previous = previous.then(async () => port.postMessage(await answer(request)));
});
