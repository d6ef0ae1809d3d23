import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';

const noFiles = { fileExists: () => false, homeDir: '/nonexistent', isTty: false };
const load = (env: Record<string, string>) => loadConfig(env, [], noFiles).memberClusters;

describe('member cluster settings', () => {
  it('default to the labelled Secrets of rollplane-system, no Cluster API, the file beside the SQLite database, no exec plugins', () => {
    const config = load({ DATABASE_URL: 'file:/var/lib/rollplane/rollplane.db' });
    expect(config).toMatchObject({
      secretNamespace: 'rollplane-system',
      capi: 'off',
      file: '/var/lib/rollplane/member-clusters.yaml',
      execPlugins: false,
      kubeVersions: { min: { major: 1, minor: 24 }, max: { major: 1, minor: 34 } },
    });
  });

  it('have no credentials file on PostgreSQL unless given one, and none at all when off', () => {
    expect(load({ DATABASE_URL: 'postgresql://u:p@db:5432/rollplane' }).file).toBeUndefined();
    expect(load({ DATABASE_URL: 'postgresql://u:p@db:5432/rollplane', ROLLPLANE_MEMBER_CLUSTERS_FILE: 'creds.yaml' }).file).toBe(path.resolve('creds.yaml'));
    expect(load({ ROLLPLANE_MEMBER_CLUSTERS_FILE: 'off' }).file).toBeUndefined();
    expect(load({ ROLLPLANE_MEMBER_CLUSTER_SECRETS: 'off' }).secretNamespace).toBeUndefined();
  });

  it('read Cluster API namespaces as all or a list of DNS-1123 labels', () => {
    expect(load({ ROLLPLANE_MEMBER_CLUSTER_CAPI: 'all' }).capi).toBe('all');
    expect(load({ ROLLPLANE_MEMBER_CLUSTER_CAPI: 'fleet, edge' }).capi).toEqual(['fleet', 'edge']);
    expect(() => load({ ROLLPLANE_MEMBER_CLUSTER_CAPI: 'Fleet' })).toThrowError(/ROLLPLANE_MEMBER_CLUSTER_CAPI/);
  });

  it('refuse a bad version window and a backoff maximum under its base, naming the setting', () => {
    expect(load({ ROLLPLANE_MEMBER_CLUSTER_KUBE_VERSIONS: '1.28-1.31' }).kubeVersions).toEqual({ min: { major: 1, minor: 28 }, max: { major: 1, minor: 31 } });
    expect(() => load({ ROLLPLANE_MEMBER_CLUSTER_KUBE_VERSIONS: '1.31-1.28' })).toThrowError(/ROLLPLANE_MEMBER_CLUSTER_KUBE_VERSIONS: the first version/);
    expect(() => load({ ROLLPLANE_MEMBER_CLUSTER_KUBE_VERSIONS: '1.x' })).toThrowError(/must be MIN-MAX/);
    expect(() => load({ ROLLPLANE_MEMBER_CLUSTER_BACKOFF_MS: '5000', ROLLPLANE_MEMBER_CLUSTER_BACKOFF_MAX_MS: '1000' })).toThrowError(
      /ROLLPLANE_MEMBER_CLUSTER_BACKOFF_MAX_MS: must be at least ROLLPLANE_MEMBER_CLUSTER_BACKOFF_MS/,
    );
  });
});
