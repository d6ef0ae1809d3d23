import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { afterEach, describe, expect, it } from 'vitest';
import { UnavailableError } from '../../../../src/errors.js';
import { generateClusterPki, type ClusterPki, type ClusterPkiInput } from '../../../../src/kinds/virtualCluster/controller/pki.js';
import { pem, pkiInput as input } from './pkiFixtures.js';
import { PkiWorkers } from '../../../../src/kinds/virtualCluster/controller/PkiWorkers.js';
import { projectRoot } from '../../../helpers/child.js';

/** Makes generateClusterPki itself throw (a RangeError building the etcd peer names), in the worker as in process. */
const unbuildable: ClusterPkiInput = { ...input, etcdReplicas: Infinity };

/** Every certificate of the result, each checked to be signed by the result's root CA. */
function expectSignedByRoot(pki: ClusterPki): X509Certificate[] {
  const root = new X509Certificate(pem(pki.rootCa, 'tls.crt'));
  const kubeconfigClient = (secret: string) => {
    const config = parseYaml(pem(pki.secrets[secret]!, secret));
    return new X509Certificate(Buffer.from(config.users[0].user['client-certificate-data'], 'base64'));
  };
  const certificates = [
    ...['apiserver-ca', 'etcd-ca', 'front-proxy-ca'].map((name) => new X509Certificate(pem(pki.secrets[name]!, 'tls.crt'))),
    kubeconfigClient('controller-manager-kubeconfig'),
    kubeconfigClient('admin-kubeconfig'),
  ];
  for (const certificate of certificates) {
    expect(certificate.verify(root.publicKey)).toBe(true);
    expect(certificate.checkIssued(root)).toBe(true);
  }
  return certificates;
}

let workers: PkiWorkers | undefined;
afterEach(async () => {
  await workers?.close();
  workers = undefined;
});

describe('PkiWorkers', () => {
  it('issues on the worker thread the same PKI as generateClusterPki: a new root CA for a placeholder, every certificate signed by it', async () => {
    workers = new PkiWorkers();
    const placeholder = { 'tls.crt': Buffer.from('simulated certificate').toString('base64'), 'tls.key': Buffer.from('simulated key').toString('base64') };
    const inProcess = await generateClusterPki({ ...input, rootCaData: placeholder });
    const pki = await workers.issue({ ...input, rootCaData: placeholder });

    expect(pki.rootCaGenerated).toBe(true);
    expect(pki.rootCaProblem).toBe(inProcess.rootCaProblem);
    expect(Object.keys(pki.secrets).sort()).toEqual(Object.keys(inProcess.secrets).sort());
    const [apiserver] = expectSignedByRoot(pki);
    expect(apiserver!.subjectAltName).toBe(new X509Certificate(pem(inProcess.secrets['apiserver-ca']!, 'tls.crt')).subjectAltName);

    const reissued = await workers.issue({ ...input, rootCaData: pki.rootCa }, { keyAlgorithm: 'ecdsa-p256' });
    expect(reissued.rootCaGenerated).toBe(false);
    expect(reissued.rootCa).toEqual(pki.rootCa);
    expectSignedByRoot(reissued);
  });

  it("rejects only the request whose generation throws, with the worker's message, and keeps serving the others", async () => {
    workers = new PkiWorkers();
    const inProcess = await generateClusterPki(unbuildable).then(
      () => expect.unreachable('generateClusterPki should reject this input'),
      (error: unknown) => error as Error,
    );

    const [failed, concurrent] = await Promise.allSettled([workers.issue(unbuildable), workers.issue(input)]);
    expect(failed.status).toBe('rejected');
    const error = (failed as PromiseRejectedResult).reason;
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(UnavailableError);
    expect(error.message).toBe(inProcess.message);
    expect(concurrent.status).toBe('fulfilled');
    expectSignedByRoot((concurrent as PromiseFulfilledResult<ClusterPki>).value);

    expectSignedByRoot(await workers.issue(input));
  });

  // Eight RSA PKIs on one worker thread: CPU-bound, so a loaded machine (load 20+) took over the default 60 s. The bound
  // only catches a worker that never answers.
  it('resolves every one of concurrent requests, each with certificates of its own', { timeout: 240_000 }, async () => {
    workers = new PkiWorkers();
    const root = (await generateClusterPki(input)).rootCa;
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => workers!.issue({ ...input, clusterName: `vc-${i}`, rootCaData: root })));

    const serials = new Set<string>();
    results.forEach((pki, i) => {
      expect(pki.rootCa).toEqual(root);
      const [, , , controllerManager] = expectSignedByRoot(pki);
      const config = parseYaml(pem(pki.secrets['controller-manager-kubeconfig']!, 'controller-manager-kubeconfig'));
      expect(config.clusters[0].name).toBe(`vc-${i}`);
      serials.add(controllerManager!.serialNumber);
    });
    expect(serials.size).toBe(8);
  });

  it('rejects the requests pending when it is closed, as retriable, and starts a new worker for the next', async () => {
    workers = new PkiWorkers();
    const pending = expect(workers.issue(input)).rejects.toBeInstanceOf(UnavailableError);
    await workers.close();

    await pending;
    expectSignedByRoot(await workers.issue(input));
  });

  it('holds the process open while a request is out, and lets it exit once answered without being closed', { timeout: 180_000 }, async () => {
    const module = pathToFileURL(path.join(projectRoot, 'src/kinds/virtualCluster/controller/PkiWorkers.ts')).href;
    // Two requests: the first also waits for the worker to start (which holds the process open by itself).
    const script = `
      import { PkiWorkers } from ${JSON.stringify(module)};
      const workers = new PkiWorkers();
      await workers.issue(${JSON.stringify(input)});
      const pki = await workers.issue(${JSON.stringify(input)});
      console.log(Object.keys(pki.secrets).length);
    `;
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: projectRoot,
      // Bounds a child that never exits (two RSA PKIs: over 30 s at load 20+).
      timeout: 120_000,
    });
    expect(stdout.trim()).toBe('6');
  });
});
