import { Kind, type OperationDefinitionNode, print, type ValueNode, visit } from 'graphql';

/**
 * Inputs whose values are secrets wherever they appear: the notification sink's signing secret and Slack token, and its
 * URL (a Slack incoming webhook's URL is its secret). The audit log keeps variables without them (AuditLog redacts
 * such keys); this removes them from the operation text too, where a caller may have written them inline, and from
 * variables bound to them under another name (`url: $u`).
 */
const SECRET_FIELD = /secret|token|password|authorization|^url$/i;
const REDACTED = '[redacted]';

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
