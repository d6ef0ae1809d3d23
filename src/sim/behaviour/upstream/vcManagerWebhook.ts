/**
 * The vc-manager's VirtualCluster webhook (kubernetes-sigs/cluster-api-provider-nested commit 4d19ac6:
 * `virtualcluster/pkg/webhook/virtualcluster/virtualcluster_webhook.go`, `pkg/apis/tenancy/v1alpha1/
 * virtualcluster_webhook.go`, `pkg/controller/constants`). With `--enable-webhook` the manager, at start-up, creates
 * the Service `virtualcluster-webhook-service` in its own namespace (port 9443, selecting `virtualcluster-webhook:
 * "true"`, a label all_in_one.yaml puts on the manager's pods) and the ValidatingWebhookConfiguration
 * `virtualcluster-validating-webhook-configuration` (deleting and re-creating it when it exists): webhook
 * `virtualcluster.validating.webhook`, every operation on `tenancy.x-k8s.io/v1alpha1 virtualclusters`, failurePolicy
 * Fail, sideEffects None. Nothing removes it on shutdown, so a manager scaled to 0 leaves every VirtualCluster write
 * refused for want of endpoints. The validator refuses only an UPDATE that empties a status.phase that was set.
 */
import type { WebhookServer } from '../../admission/webhooks.js';
import type { KubeObject } from '../../types.js';

export const VC_WEBHOOK_SERVICE = 'virtualcluster-webhook-service';
export const VC_WEBHOOK_CONFIGURATION = 'virtualcluster-validating-webhook-configuration';
export const VC_WEBHOOK_NAME = 'virtualcluster.validating.webhook';
const VC_WEBHOOK_PORT = 9443;
const VALIDATE_PATH = '/validate-tenancy-x-k8s-io-v1alpha1-virtualcluster';
const WEBHOOK_LABEL = 'virtualcluster-webhook';

export function vcWebhookService(namespace: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: VC_WEBHOOK_SERVICE, namespace, labels: { [WEBHOOK_LABEL]: 'true' } },
    spec: { ports: [{ port: VC_WEBHOOK_PORT, targetPort: VC_WEBHOOK_PORT }], selector: { [WEBHOOK_LABEL]: 'true' } },
  };
}

export function vcWebhookConfiguration(namespace: string): KubeObject {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: VC_WEBHOOK_CONFIGURATION, labels: { [WEBHOOK_LABEL]: 'true' } },
    webhooks: [
      {
        name: VC_WEBHOOK_NAME,
        clientConfig: {
          service: { name: VC_WEBHOOK_SERVICE, namespace, path: VALIDATE_PATH, port: VC_WEBHOOK_PORT },
          caBundle: Buffer.from('-----BEGIN CERTIFICATE-----\nc2ltdWxhdGVk\n-----END CERTIFICATE-----\n').toString('base64'),
        },
        failurePolicy: 'Fail',
        sideEffects: 'None',
        admissionReviewVersions: ['v1', 'v1beta1'],
        rules: [{ operations: ['*'], apiGroups: ['tenancy.x-k8s.io'], apiVersions: ['v1alpha1'], resources: ['virtualclusters'] }],
        timeoutSeconds: 10,
      },
    ],
  };
}

/** `validateVirtualClusterUpdate`, answered as controller-runtime answers a validator's APIStatus error (its code). */
export const vcWebhookServer: WebhookServer = (review) => {
  if (review.path !== VALIDATE_PATH || review.operation !== 'UPDATE') return { allowed: true };
  const oldPhase = review.oldObject?.status?.phase ?? '';
  const phase = review.object?.status?.phase ?? '';
  if (oldPhase === '' || phase !== '') return { allowed: true };
  const name = review.name;
  return {
    allowed: false,
    status: {
      code: 422,
      reason: 'Invalid',
      message: `VirtualCluster.tenancy.x-k8s.io "${name}" is invalid: status.phase: Invalid value: "${name}": cannot set virtualcluster.Status.Phase to empty`,
    },
  };
};
