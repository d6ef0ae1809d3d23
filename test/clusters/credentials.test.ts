import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { CredentialError, parseMemberKubeconfig } from '../../src/clusters/credentials.js';
import { certificatePem, issueCertificate } from '../../src/kinds/virtualCluster/controller/certificates.js';
import { kubeconfigFor } from '../../src/sim/kubeconfig.js';

const PLANTED = 'planted-kubeconfig-token-5e1d0c';
const STRICT = { allowExecPlugins: false };
const dir = mkdtempSync(path.join(os.tmpdir(), 'rollplane credentials '));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function withUser(user: Record<string, unknown>, cluster: Record<string, unknown> = {}): string {
  const doc = kubeconfigFor('https://member.example:6443', PLANTED) as { users: { user: unknown }[]; clusters: { cluster: Record<string, unknown> }[] };
  doc.users[0]!.user = user;
  Object.assign(doc.clusters[0]!.cluster, cluster);
  return stringify(doc);
}

/** The error `parse` throws, checked to carry no part of the credentials. */
function refusal(text: string, rules = STRICT): CredentialError {
  try {
    parseMemberKubeconfig(text, 'rollplane-system/edge-1', rules);
  } catch (error) {
    expect(error).toBeInstanceOf(CredentialError);
    const e = error as CredentialError;
    expect(`${e.message} ${JSON.stringify(e.details)} ${String(e.cause)}`).not.toContain(PLANTED);
    expect(e.cause).toBeUndefined();
    return e;
  }
  throw new Error('not refused');
}

describe('member kubeconfigs', () => {
  it('loads an inline kubeconfig on its current context', () => {
    const kc = parseMemberKubeconfig(stringify(kubeconfigFor('https://member.example:6443', PLANTED)), 'x', STRICT);
    expect(kc.getCurrentCluster()?.server).toBe('https://member.example:6443');
  });

  it('refuses exec and auth-provider plugins with a coded error unless the operator allows them', () => {
    const exec = withUser({ exec: { apiVersion: 'client.authentication.k8s.io/v1', command: 'sh', args: ['-c', `echo ${PLANTED}`] } });
    const e = refusal(exec);
    expect(e).toMatchObject({ code: 'BAD_USER_INPUT', reason: 'EXEC_PLUGIN', details: { reason: 'EXEC_PLUGIN' } });
    expect(e.message).toContain('rollplane-system/edge-1: user "rollplane-sim" uses an exec credential plugin');
    expect(e.message).toContain('ROLLPLANE_MEMBER_CLUSTER_EXEC_PLUGINS=true');
    expect(refusal(withUser({ 'auth-provider': { name: 'oidc', config: { 'id-token': PLANTED } } })).reason).toBe('AUTH_PROVIDER');
    expect(parseMemberKubeconfig(exec, 'x', { allowExecPlugins: true }).getCurrentUser()?.exec).toBeDefined();
  });

  it("refuses references to files of rollplane's host, and reads none of them", () => {
    const file = path.join(dir, 'token');
    writeFileSync(file, PLANTED);
    expect(refusal(withUser({ 'token-file': file })).message).toContain('(token-file)');
    expect(refusal(withUser({ 'client-certificate': file, 'client-key': file })).reason).toBe('FILE_REFERENCE');
    expect(refusal(withUser({ token: 'x' }, { 'certificate-authority': file })).message).toContain('cluster "rollplane-sim" names a file');
  });

  it('says what is wrong with a malformed one without quoting it', () => {
    const broken = `apiVersion: v1\nusers:\n- name: u\n  user:\n    token: ${PLANTED}\n   bad: [indent\n`;
    const e = refusal(broken);
    expect(e.reason).toBe('MALFORMED');
    expect(e.message).toMatch(/^rollplane-system\/edge-1: the kubeconfig is not valid YAML \(line \d+\)$/);
    expect(refusal('').reason).toBe('MALFORMED');
    expect(refusal('users: 3').message).toContain('"users" must be a list');
    const noContext = stringify({ ...kubeconfigFor('https://m:6443', PLANTED), 'current-context': '' });
    expect(refusal(noContext).reason).toBe('NO_CLUSTER');
  });

  // Attack 13, finding 1: a merge key hid an exec user from the check (this parser leaves `<<` alone) while client-node's
  // parser resolved it and ran the command inside rollplane. Each form refused, and nothing runs.
  it.each([
    ['an anchored map merged into the user', (exec: string) => `x: &E {exec: ${exec}}\nusers:\n- name: u\n  user:\n    <<: *E\n`],
    ['an inline map merged into the user', (exec: string) => `users:\n- name: u\n  user:\n    <<: {exec: ${exec}}\n`],
    ['a list of maps merged', (exec: string) => `a: &F {token: t}\nb: &E {exec: ${exec}}\nusers:\n- name: u\n  user:\n    <<: [*F, *E]\n`],
    ['the whole users entry merged', (exec: string) => `u: &U {name: u, user: {exec: ${exec}}}\nusers:\n- <<: *U\n`],
  ])('refuses %s (no exec hidden by a merge key runs)', (_name, build) => {
    const marker = path.join(dir, `merged-exec-${Math.random().toString(36).slice(2)}`);
    const exec = `{apiVersion: client.authentication.k8s.io/v1beta1, command: sh, args: ["-c", "touch '${marker}'"]}`;
    const rest =
      'clusters:\n- name: c\n  cluster: {server: "https://member.example:6443"}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n';
    const e = refusal(build(exec) + rest);
    expect(e.reason).toBe('MALFORMED');
    expect(e.message).toMatch(/uses (an anchor|an alias|a merge key \(<<\)) \(line \d+\); anchors, aliases and merge keys are not accepted/);
    expect(existsSync(marker)).toBe(false);
  });

  it('refuses an alias bomb as one bad kubeconfig, quickly, without expanding it', () => {
    const levels = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 9; i++)
      levels.push(
        `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(10)
          .fill(`*${String.fromCharCode(96 + i)}`)
          .join(', ')}]`,
      );
    const e = refusal(`${levels.join('\n')}\nusers: []\n`);
    expect(e.reason).toBe('MALFORMED');
  });

  it('hands client-node the document it checked, not the text (a quoted key is no merge key to either)', () => {
    const text = `${stringify(kubeconfigFor('https://member.example:6443', PLANTED))}`;
    const kc = parseMemberKubeconfig(text, 'x', STRICT);
    expect(kc.getCurrentUser()?.token).toBe(PLANTED);
    expect(kc.getCurrentUser()?.exec).toBeUndefined();
  });

  it('refuses a plain http:// server without insecure-skip-tls-verify, saying why (the client would send nothing)', () => {
    const doc = kubeconfigFor('http://member.example:8080', PLANTED) as { clusters: { cluster: Record<string, unknown> }[] };
    delete doc.clusters[0]!.cluster['insecure-skip-tls-verify'];
    const e = refusal(stringify(doc));
    expect(e.reason).toBe('MALFORMED');
    expect(e.message).toContain('is served over plain http://, which the Kubernetes client accepts only with insecure-skip-tls-verify: true');
    expect(e.message).not.toContain('member.example');
    doc.clusters[0]!.cluster['insecure-skip-tls-verify'] = true;
    expect(parseMemberKubeconfig(stringify(doc), 'x', STRICT).getCurrentCluster()?.server).toBe('http://member.example:8080');
  });
});

/** A self-signed certificate (a CA, and a client certificate for the tests alike) and its key, in PEM. */
function certifiedKey(): { cert: string; key: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const der = issueCertificate(
    undefined,
    {
      subject: [['CN', 'member']],
      publicKeySpki: publicKey.export({ type: 'spki', format: 'der' }),
      serialNumber: Buffer.from([1]),
      notBefore: new Date(),
      notAfter: new Date(Date.now() + 86_400_000),
      ca: true,
      keyUsage: 0,
      extendedKeyUsage: [],
      dns: [],
      ips: [],
    },
    { key: privateKey, signature: 'ecdsa-p256' },
  );
  return { cert: certificatePem(der), key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
}

const base64 = (text: string) => Buffer.from(text).toString('base64');

/** Attack 14, F5 and F8: what was accepted at registration and then failed, or did something else, on connect. */
describe('member kubeconfigs refused at registration (attack 14)', () => {
  it("refuses kubectl's tokenFile, which client-node ignores (the member was contacted with no credentials)", () => {
    const file = path.join(dir, 'token-camel');
    writeFileSync(file, PLANTED);
    const e = refusal(withUser({ tokenFile: file }));
    expect(e).toMatchObject({ reason: 'FILE_REFERENCE' });
    expect(e.message).toContain("names a file of rollplane's host (tokenFile); give token instead");
    expect(refusal(withUser({ 'client-key': file })).message).toContain('give client-key-data instead');
  });

  it('refuses a proxy-url, which the deny list cannot see through, naming no address', () => {
    const e = refusal(withUser({ token: PLANTED }, { 'proxy-url': 'http://127.0.0.2:47101' }));
    expect(e).toMatchObject({ reason: 'PROXY_URL' });
    expect(e.message).toBe(
      'rollplane-system/edge-1: cluster "rollplane-sim" names a proxy (proxy-url); member clusters are reached directly, where ROLLPLANE_MEMBER_CLUSTER_DENY_CIDRS can check the address',
    );
    expect(refusal(withUser({ token: PLANTED }, { 'proxy-url': 'socks5://127.0.0.2:1080' })).reason).toBe('PROXY_URL');
  });

  it.each(['file:///etc/passwd', 'unix:///var/run/docker.sock', '::::<garbage>', 'ftp://member.example:21', 'https://'])(
    'refuses the server %s: not an http(s) URL, and does not quote it',
    (server) => {
      const e = refusal(withUser({ token: PLANTED }, { server }));
      expect(e).toMatchObject({ reason: 'MALFORMED' });
      expect(e.message).toBe('rollplane-system/edge-1: cluster "rollplane-sim" has a server that is not an https:// (or http://) URL with a host');
    },
  );

  it('refuses certificate and key data that do not parse, or that do not match, naming the field and never the data', () => {
    const { cert, key } = certifiedKey();
    const other = certifiedKey();
    const user = { token: 'x', 'client-certificate-data': base64(cert), 'client-key-data': base64(key) };
    expect(parseMemberKubeconfig(withUser(user, { 'certificate-authority-data': base64(`${cert}${other.cert}`) }), 'x', STRICT).getCurrentUser()?.keyData).toBe(
      base64(key),
    );
    const cases: [Record<string, unknown>, Record<string, unknown>, string][] = [
      [{ ...user, 'client-key-data': base64(PLANTED) }, {}, 'user "rollplane-sim" has client-key-data that is not a private key in PEM'],
      [
        { ...user, 'client-key-data': base64(`-----BEGIN PRIVATE KEY-----\n${base64(PLANTED)}\n-----END PRIVATE KEY-----\n`) },
        {},
        'client-key-data that is not a private key in PEM',
      ],
      [{ ...user, 'client-certificate-data': base64(PLANTED) }, {}, 'user "rollplane-sim" has client-certificate-data that is not a certificate in PEM'],
      [{ ...user, 'client-key-data': base64(other.key) }, {}, 'user "rollplane-sim" has client-key-data that is not the key of its client-certificate-data'],
      [
        { token: 'x' },
        { 'certificate-authority-data': base64(PLANTED) },
        'cluster "rollplane-sim" has certificate-authority-data that is not a certificate in PEM',
      ],
      [
        { token: 'x' },
        { 'certificate-authority-data': base64(`${cert}-----BEGIN CERTIFICATE-----\n${base64(PLANTED)}\n-----END CERTIFICATE-----\n`) },
        'certificate-authority-data that is not a certificate in PEM',
      ],
      [{ token: 'x', 'client-key-data': 42 }, {}, 'client-key-data that is not a private key in PEM'],
    ];
    for (const [u, cluster, message] of cases) {
      const e = refusal(withUser(u, cluster));
      expect(e.reason).toBe('MALFORMED');
      expect(e.message).toContain(message);
      expect(e.message).not.toContain(base64(PLANTED));
    }
  });
});
