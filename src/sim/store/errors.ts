/**
 * A failure of a simulated Kubernetes API call, shaped like the wire `Status` object so the HTTP layer can serialize it
 * as-is and in-process callers (kubelet, controllers) can branch on `code`/`reason` exactly as on a real API error.
 * It is not an AppError: its `code` is the HTTP status, as in Kubernetes; rollplane code never sees it directly — it
 * reaches rollplane only through HTTP and client-node, and src/kube translates that into AppErrors.
 */
export type StatusReason =
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Invalid'
  | 'BadRequest'
  | 'MethodNotAllowed'
  | 'Expired'
  | 'Gone'
  | 'Forbidden'
  | 'NotAcceptable'
  | 'UnsupportedMediaType'
  | 'TooManyRequests'
  | 'InternalError'
  | 'ServiceUnavailable'
  | 'Timeout';

export interface StatusCause {
  /** The cause type (FieldValueInvalid, FieldValueRequired, …); serialized as `reason`, as kube-apiserver does. */
  type?: string;
  reason?: string;
  message?: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure';
  message: string;
  reason: StatusReason;
  details?: StatusDetails;
  code: number;
}

export class SimApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: StatusReason,
    message: string,
    readonly details?: StatusDetails,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'SimApiError';
  }

  toStatus(): Status {
    const status: Status = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      code: this.code,
    };
    if (this.details) {
      // On the wire a cause's type is `reason` (metav1.StatusCause's Go field Type is tagged json:"reason").
      status.details = this.details.causes
        ? { ...this.details, causes: this.details.causes.map(({ type, ...rest }) => (type === undefined ? rest : { reason: type, ...rest })) as StatusCause[] }
        : this.details;
    }
    return status;
  }
}

export function isSimApiError(value: unknown): value is SimApiError {
  return value instanceof SimApiError;
}

/** `pods "x" not found` — the resource string is the plural, optionally "plural.group", as Kubernetes prints it. */
export function notFound(resource: string, name: string, group = '', kind?: string): SimApiError {
  return new SimApiError(404, 'NotFound', `${qualified(resource, group)} "${name}" not found`, {
    name,
    group,
    kind: kind ?? resource,
  });
}

export function alreadyExists(resource: string, name: string, group = ''): SimApiError {
  return new SimApiError(409, 'AlreadyExists', `${qualified(resource, group)} "${name}" already exists`, {
    name,
    group,
    kind: resource,
  });
}

export function conflict(resource: string, name: string, why: string, group = '', causes?: StatusCause[]): SimApiError {
  const details: StatusDetails = { name, group, kind: resource };
  if (causes) details.causes = causes;
  return new SimApiError(409, 'Conflict', `Operation cannot be fulfilled on ${qualified(resource, group)} "${name}": ${why}`, details);
}

/** apierrors.NewInvalid: one cause is quoted as is, several (deduplicated) as an aggregate `[a, b]`. */
export function invalid(kind: string, name: string, causes: StatusCause[], group = ''): SimApiError {
  const texts = [...new Set(causes.map((c) => (c.field ? `${c.field}: ${c.message ?? ''}` : (c.message ?? ''))))];
  const text = texts.length === 1 ? texts[0] : `[${texts.join(', ')}]`;
  return new SimApiError(422, 'Invalid', `${kind}${group ? `.${group}` : ''} "${name}" is invalid: ${text}`, {
    name,
    group,
    kind,
    causes,
  });
}

export function badRequest(message: string): SimApiError {
  return new SimApiError(400, 'BadRequest', message);
}

export function expired(message: string): SimApiError {
  return new SimApiError(410, 'Expired', message);
}

export function methodNotAllowed(message = 'the server does not allow this method on the requested resource'): SimApiError {
  return new SimApiError(405, 'MethodNotAllowed', message);
}

function qualified(resource: string, group: string): string {
  return group ? `${resource}.${group}` : resource;
}
