import { CustomObjectsApi } from '@kubernetes/client-node';
import { startSimulator, type Simulator } from '../../../src/sim/index.js';

/**
 * What the CRD tests share: a simulator with their CRDs installed over HTTP, and plain JSON requests to it. CRDs go
 * as wire JSON: client-node's typed CRD model spells `enum`/`default`/x-kubernetes-* differently.
 */
export const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

export interface RawResponse {
  status: number;
  body: any;
  /** The `Warning` header (deprecated versions, unknown fields), or null. */
  warning: string | null;
}

/** One request to `sim` as plain JSON over HTTP, answered as status, parsed body and Warning header. */
export async function rawRequest(sim: Simulator, method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<RawResponse> {
  const response = await fetch(sim.url + path, {
    method,
    headers: { 'Content-Type': contentType },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json(), warning: response.headers.get('warning') };
}

/** A simulator without its controllers, with `crds` created (each must answer 201), and a custom-objects client. */
export async function startWithCrds(...crds: unknown[]): Promise<{ sim: Simulator; custom: CustomObjectsApi }> {
  const sim = await startSimulator({ behaviour: false });
  try {
    for (const crd of crds) {
      const created = await rawRequest(sim, 'POST', CRDS, crd);
      if (created.status !== 201) throw new Error(`creating a CRD answered ${created.status}: ${JSON.stringify(created.body)}`);
    }
  } catch (error) {
    await sim.stop();
    throw error;
  }
  return { sim, custom: sim.kubeConfig.makeApiClient(CustomObjectsApi) };
}
