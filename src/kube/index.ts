export { ApiBudget, type ApiBudgetOptions } from './ApiBudget.js';
export { BudgetedKubeConfig, createKubeClients, loadKubeConfig, type KubeClientConfig, type KubeClients, type KubeMode } from './createKubeClients.js';
export { httpStatusOf, isRetriable, kubeCall, ResourceExpiredError, statusOf, translateKubeError, writeOutcomeUnknown, type KubeStatus } from './errors.js';
export { applyParams, applyPatchOptions, jsonPatchOptions, mergePatchOptions } from './patch.js';
