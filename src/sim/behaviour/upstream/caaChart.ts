/**
 * The cloud-api-adaptor as the `peerpods` Helm chart installs it (confidential-containers/cloud-api-adaptor
 * `src/cloud-api-adaptor/install/charts/peerpods/templates/{daemonset,configmap,rbac}.yaml` and `values.yaml`, commit
 * fbdde756, chart 0.4.0), with provider `libvirt` and no custom TLS certificates. Not a controller loop: the
 * DaemonSet's own RollingUpdate (maxUnavailable 0, maxSurge 1) is run by the simulated DaemonSet controller.
 */
import type { KubeObject } from '../../types.js';

export const CAA_DAEMONSET = 'cloud-api-adaptor-daemonset';
export const CAA_CONFIGMAP = 'peer-pods-cm';
export const CAA_SERVICE_ACCOUNT = 'cloud-api-adaptor';
/** The daemonset's nodeSelector: CAA's install docs have each worker labelled `node.kubernetes.io/worker=`. */
export const CAA_WORKER_LABEL = 'node.kubernetes.io/worker';

export interface CaaChartValues {
  namespace: string;
  /** `image.name:image.tag`. */
  image: string;
  /** providerConfigs.libvirt.RUNTIMECLASS_NAME (the probe's default is kata-remote). */
  runtimeClassName: string;
  /** daemonset.podLabels. */
  podLabels?: Record<string, string>;
  /** Labels an operator put on the DaemonSet after installing (e.g. rollplane's `rollplane.io/node-agent`). */
  extraDaemonSetLabels?: Record<string, string>;
}

export function caaServiceAccount(namespace: string): KubeObject {
  return { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: CAA_SERVICE_ACCOUNT, namespace } };
}

export function caaConfigMap(values: CaaChartValues): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: CAA_CONFIGMAP,
      namespace: values.namespace,
      labels: { 'app.kubernetes.io/name': 'peerpods', 'app.kubernetes.io/instance': 'peerpods', 'app.kubernetes.io/managed-by': 'Helm' },
    },
    data: { CLOUD_PROVIDER: 'libvirt', RUNTIMECLASS_NAME: values.runtimeClassName },
  };
}

export function caaDaemonSet(values: CaaChartValues): KubeObject {
  const hostPath = (name: string, path: string, type?: string) => ({ name, hostPath: type === undefined ? { path } : { path, type } });
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: CAA_DAEMONSET, namespace: values.namespace, labels: { app: 'cloud-api-adaptor', ...values.extraDaemonSetLabels } },
    spec: {
      selector: { matchLabels: { app: 'cloud-api-adaptor' } },
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
      template: {
        metadata: { labels: { app: 'cloud-api-adaptor', ...values.podLabels } },
        spec: {
          serviceAccountName: CAA_SERVICE_ACCOUNT,
          containers: [
            {
              command: ['/usr/local/bin/entrypoint.sh'],
              env: [
                { name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
                { name: 'POD_UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
              ],
              // secrets.mode "create": the chart always references peer-pods-secret, then the ConfigMap.
              envFrom: [{ secretRef: { name: 'peer-pods-secret' } }, { configMapRef: { name: CAA_CONFIGMAP } }],
              image: values.image,
              imagePullPolicy: 'Always',
              name: 'cloud-api-adaptor-con',
              securityContext: { capabilities: { add: ['NET_ADMIN', 'SYS_ADMIN'] } },
              startupProbe: { httpGet: { path: '/startup', port: 8000, host: '127.0.0.1' }, failureThreshold: 30, periodSeconds: 20, initialDelaySeconds: 20 },
              volumeMounts: [
                { mountPath: '/run/peerpod', name: 'pods-dir' },
                { mountPath: '/run/netns', mountPropagation: 'HostToContainer', name: 'netns' },
                { mountPath: '/run/xtables.lock', name: 'xtables-lock' },
                { mountPath: '/lib/modules', name: 'lib-modules', readOnly: true },
                { mountPath: '/run/kata-containers/shared/direct-volumes', name: 'kata-direct-volumes-dir' },
              ],
            },
          ],
          hostNetwork: true,
          dnsPolicy: 'ClusterFirstWithHostNet',
          nodeSelector: { [CAA_WORKER_LABEL]: '' },
          volumes: [
            hostPath('pods-dir', '/run/peerpod'),
            hostPath('netns', '/run/netns'),
            hostPath('xtables-lock', '/run/xtables.lock', 'FileOrCreate'),
            hostPath('lib-modules', '/lib/modules', ''),
            hostPath('kata-direct-volumes-dir', '/run/kata-containers/shared/direct-volumes', 'DirectoryOrCreate'),
          ],
        },
      },
    },
  };
}

/** The chart's Secret (secrets.mode "create", provider libvirt): the DaemonSet's envFrom needs it to start. */
export function caaSecret(namespace: string): KubeObject {
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'peer-pods-secret', namespace }, type: 'Opaque', data: {} };
}
