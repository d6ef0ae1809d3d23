import { SimApiError } from '../store/errors.js';
import type { ResourceType } from '../types.js';

/**
 * apierrors.NewForbidden as admission.NewForbidden calls it: `pods "x" is forbidden: <why>` (the resource qualified by
 * its group), details naming the resource; without a name, `pods is forbidden: <why>`.
 */
export function forbidden(type: ResourceType, name: string, why: string): SimApiError {
  const resource = type.group ? `${type.plural}.${type.group}` : type.plural;
  const message = name ? `${resource} "${name}" is forbidden: ${why}` : `${resource} is forbidden: ${why}`;
  return new SimApiError(403, 'Forbidden', message, { name, group: type.group, kind: type.plural });
}
