import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';

/**
 * client-node 1.4 sends every patch as `application/json-patch+json` unless told otherwise; these give the typed
 * APIs' patch calls the right Content-Type. Pass the result as the call's second (options) argument.
 */
export const mergePatchOptions = () => setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
export const jsonPatchOptions = () => setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);
export const applyPatchOptions = () => setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);

/** Query parameters of a server-side apply: the field manager owning the applied fields, and whether to take over conflicts. */
export function applyParams(fieldManager: string, force = true): { fieldManager: string; force: boolean } {
  return { fieldManager, force };
}
