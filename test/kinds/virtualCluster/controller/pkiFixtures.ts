import type { ClusterPkiInput } from '../../../../src/kinds/virtualCluster/controller/pki.js';

/** A tenant control plane's PKI input as the reconciler builds it, for the PKI tests. */
export const pkiInput: ClusterPkiInput = {
  clusterName: 'vc-1',
  clusterNamespace: 'default-abc123-vc-1',
  apiserverServiceName: 'apiserver-svc',
  apiserverPort: 6443,
  apiserverClusterIP: '10.96.0.10',
  etcdServiceName: 'etcd',
  etcdStatefulSetName: 'etcd',
  etcdReplicas: 1,
};

/** A PEM value of secret data (base64 values). */
export const pem = (data: Record<string, string>, key: string) => Buffer.from(data[key]!, 'base64').toString('utf8');
