import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { loadKubeConfig } from '../../src/kube/createKubeClients.js';

let dir: string;
const saved = { ...process.env };

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'rollplane-kc-'));
});

afterEach(() => {
  process.env = { ...saved };
  rmSync(dir, { recursive: true, force: true });
});

function kubeconfig(server: string, contexts: string[] = ['main']): string {
  const file = path.join(dir, `kubeconfig-${Math.random().toString(36).slice(2)}`);
  writeFileSync(
    file,
    `apiVersion: v1
kind: Config
clusters:
${contexts.map((c) => `- name: ${c}\n  cluster: { server: "${server}/${c}", insecure-skip-tls-verify: true }`).join('\n')}
users:
- name: u
  user: { token: t }
contexts:
${contexts.map((c) => `- name: ${c}\n  context: { cluster: ${c}, user: u }`).join('\n')}
current-context: ${contexts[0]}
`,
  );
  return file;
}

describe('loadKubeConfig', () => {
  it('sim mode reads the kubeconfig the simulator wrote, and requires its path', () => {
    expect(loadKubeConfig({ mode: 'sim', kubeconfigPath: kubeconfig('http://127.0.0.1:1') }).getCurrentCluster()?.server).toBe('http://127.0.0.1:1/main');
    expect(() => loadKubeConfig({ mode: 'sim' })).toThrow(AppError);
  });

  it('kubeconfig mode uses the given path, else $KUBECONFIG, and honours a context', () => {
    const a = kubeconfig('https://a.example', ['one', 'two']);
    expect(loadKubeConfig({ mode: 'kubeconfig', kubeconfigPath: a, context: 'two' }).getCurrentCluster()?.server).toBe('https://a.example/two');
    process.env.KUBECONFIG = kubeconfig('https://env.example');
    expect(loadKubeConfig({ mode: 'kubeconfig' }).getCurrentCluster()?.server).toBe('https://env.example/main');
  });

  it('in-cluster mode fails clearly outside a pod', () => {
    delete process.env.KUBERNETES_SERVICE_HOST;
    delete process.env.KUBERNETES_SERVICE_PORT;
    expect(() => loadKubeConfig({ mode: 'in-cluster' })).toThrow(/KUBERNETES_SERVICE_HOST/);
  });

  it('in-cluster mode builds the service URL from the pod environment', () => {
    process.env.KUBERNETES_SERVICE_HOST = '10.96.0.1';
    process.env.KUBERNETES_SERVICE_PORT = '443';
    expect(loadKubeConfig({ mode: 'in-cluster' }).getCurrentCluster()?.server).toBe('https://10.96.0.1:443');
  });
});
