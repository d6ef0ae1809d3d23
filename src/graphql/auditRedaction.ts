import { Kind, type OperationDefinitionNode, print, type ValueNode, visit } from 'graphql';

/**
 * Inputs whose values are secrets wherever they appear: the notification sink's signing secret and Slack token, and its
 * URL (a Slack incoming webhook's URL is its secret); a member cluster's kubeconfig (registerCluster). The audit log keeps variables without them (AuditLog redacts
 * such keys); this removes them from the operation text too, where a caller may have written them inline, and from
 * variables bound to them under another name (`url: $u`).
 */
const SECRET_FIELD = /secret|token|password|authorization|kubeconfig|^url$/i;
const REDACTED = '[redacted]';

/**
 * `message` without any secret input of the operation: GraphQL's own refusal of a variable quotes the value it refused
 * (`Variable "$input" got invalid value { kubeconfig: "…" }`), and the audit entry keeps the message.
 */
export function redactMessage(message: string, operation: OperationDefinitionNode, variables: Record<string, unknown> | null | undefined): string {
  const secrets = new Set<string>();
  const collect = (value: unknown, secret: boolean, depth: number): void => {
    if (depth > 32) return;
    if (typeof value === 'string') {
      if (secret && value.length >= 4) secrets.add(value);
    } else if (Array.isArray(value)) {
      for (const item of value) collect(item, secret, depth + 1);
    } else if (value && typeof value === 'object') {
      for (const [key, child] of Object.entries(value)) collect(child, secret || SECRET_FIELD.test(key), depth + 1);
    }
  };
  const bound = new Set<string>();
  visit(operation, {
    [Kind.ARGUMENT]: (node) => {
      if (SECRET_FIELD.test(node.name.value) && node.value.kind === Kind.VARIABLE) bound.add(node.value.name.value);
    },
    [Kind.OBJECT_FIELD]: (node) => {
      if (!SECRET_FIELD.test(node.name.value)) return;
      if (node.value.kind === Kind.VARIABLE) bound.add(node.value.name.value);
      if (node.value.kind === Kind.STRING) secrets.add(node.value.value);
    },
  });
  for (const [name, value] of Object.entries(variables ?? {})) collect(value, bound.has(name), 0);
  let redacted = message;
  // As sent, and as graphql-js quotes a string (JSON escapes: a kubeconfig's newlines become \n).
  for (const secret of secrets) for (const form of [secret, JSON.stringify(secret).slice(1, -1)]) redacted = redacted.split(form).join(REDACTED);
  return redacted;
}

/** The operation's text and variables with every secret input replaced; the text unchanged when it holds none. */
export function redactSecrets(
  operation: OperationDefinitionNode,
  source: string,
  variables: Record<string, unknown> | null | undefined,
): { source: string; variables: Record<string, unknown> } {
  let found = false;
  const boundVariables = new Set<string>();
  const redactValue = (value: ValueNode): ValueNode | undefined => {
    if (value.kind === Kind.STRING) {
      found = true;
      return { ...value, value: REDACTED, block: false };
    }
    if (value.kind === Kind.VARIABLE) boundVariables.add(value.name.value);
    return undefined;
  };
  const redacted = visit(operation, {
    [Kind.OBJECT_FIELD](node) {
      if (!SECRET_FIELD.test(node.name.value)) return undefined;
      const value = redactValue(node.value);
      return value ? { ...node, value } : undefined;
    },
    [Kind.ARGUMENT](node) {
      if (!SECRET_FIELD.test(node.name.value)) return undefined;
      const value = redactValue(node.value);
      return value ? { ...node, value } : undefined;
    },
  });
  const vars = { ...(variables ?? {}) };
  for (const name of boundVariables) if (name in vars) vars[name] = REDACTED;
  return { source: found ? print(redacted) : source, variables: vars };
}
