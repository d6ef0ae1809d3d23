import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';

/**
 * client-node 1.4 sends every patch as `application/json-patch+json` unless told otherwise; these give the typed
 * APIs' patch calls the right Content-Type. Pass the result as the call's second (options) argument.
 */
export const mergePatchOptions = (): ReturnType<typeof setHeaderOptions> => {
  const options = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  MERGE_PATCHES.add(options);
  return options;
};

/** The options objects mergePatchOptions made: a merge patch of a custom object may take the plain JSON path. */
const MERGE_PATCHES = new WeakSet<object>();

/** Whether `options` are exactly what mergePatchOptions returned (nothing else set on the call). */
export function isMergePatchOptions(options: unknown): boolean {
  return typeof options === 'object' && options !== null && MERGE_PATCHES.has(options);
}
export const jsonPatchOptions = () => setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);
export const applyPatchOptions = () => setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);

/** Query parameters of a server-side apply: the field manager owning the applied fields, and whether to take over conflicts. */
export function applyParams(fieldManager: string, force = true): { fieldManager: string; force: boolean } {
  return { fieldManager, force };
}
