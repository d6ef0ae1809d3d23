import {
  type ASTNode,
  type DocumentNode,
  type GraphQLSchema,
  getVariableValues,
  Kind,
  type OperationDefinitionNode,
  parse,
  print,
  type StringValueNode,
  type ValueNode,
  visit,
} from 'graphql';

/**
 * Inputs whose values are secrets wherever they appear: the notification sink's signing secret and Slack token, and its
 * URL (a Slack incoming webhook's URL is its secret); a member cluster's kubeconfig (registerCluster). The audit log keeps
 * variables without them (AuditLog redacts such keys); this removes them from the operation text too — wherever the
 * document holds them: inline arguments, fragments, variables' defaults — and from variables bound to them under another
 * name (`url: $u`).
 */
const SECRET_FIELD = /secret|token|password|authorization|kubeconfig|^url$/i;
const REDACTED = '[redacted]';
const REDACTED_NODE: StringValueNode = { kind: Kind.STRING, value: REDACTED, block: false };
/** graphql-js's refusal of a variable's value: `Variable "$input" got invalid value { … } at "input.x"; …`. */
const INVALID_VARIABLE = /^Variable "\$([_A-Za-z][_0-9A-Za-z]*)" got invalid value /;

/** What the audit entry keeps of a mutation's text and variables. */
export interface RedactedInput {
  source: string;
  variables: Record<string, unknown>;
}

/**
 * The document's text and the variables with every secret input replaced. The whole document is read (not only the
 * chosen operation: a named fragment carries its arguments), variables the document does not declare are not kept
 * (nothing says what they hold), and a variable whose value does not fit its declared type is kept as a marker only: its
 * value may be a secret under a misspelt or unknown key. It is checked here, against the schema, because a refused
 * caller (FORBIDDEN) is audited before GraphQL ever coerces the variables. A document that does not parse is not kept.
 */
export function redactSecrets(
  source: string,
  variables: Record<string, unknown> | null | undefined,
  chosen: { schema: GraphQLSchema; operation: OperationDefinitionNode },
): RedactedInput {
  let document: DocumentNode;
  try {
    document = parse(source, { noLocation: true });
  } catch {
    return { source: '[not recorded: the document does not parse]', variables: {} };
  }
  const bound = boundVariables(document);
  let found = false;
  const secretValue = (value: ValueNode): ValueNode | undefined => {
    if (value.kind === Kind.VARIABLE) return undefined;
    found = true;
    return REDACTED_NODE;
  };
  const redacted = visit(document, {
    [Kind.OBJECT_FIELD](node) {
      if (!SECRET_FIELD.test(node.name.value)) return undefined;
      const value = secretValue(node.value);
      return value ? { ...node, value } : undefined;
    },
    [Kind.ARGUMENT](node) {
      if (!SECRET_FIELD.test(node.name.value)) return undefined;
      const value = secretValue(node.value);
      return value ? { ...node, value } : undefined;
    },
    [Kind.VARIABLE_DEFINITION](node) {
      if (!node.defaultValue || !bound.has(node.variable.name.value)) return undefined;
      found = true;
      return { ...node, defaultValue: REDACTED_NODE };
    },
  });
  const refused = refusedVariables(chosen.schema, chosen.operation, variables);
  const kept: Record<string, unknown> = {};
  for (const name of declaredVariables(document)) {
    if (!variables || !Object.hasOwn(variables, name)) continue;
    if (bound.has(name)) kept[name] = REDACTED;
    else if (refused.has(name)) kept[name] = '[not recorded: GraphQL refused this value]';
    else kept[name] = variables[name];
  }
  return { source: found ? print(redacted) : source, variables: kept };
}

/**
 * `message` without any secret input: GraphQL's refusal of a variable quotes the value it refused, which may be a
 * kubeconfig under any key, so such a message keeps only which variable it was; any other message has the secret
 * inputs written inline or in variables bound to secret fields cut out.
 */
export function redactMessage(message: string, source: string, variables: Record<string, unknown> | null | undefined): string {
  const invalid = INVALID_VARIABLE.exec(message);
  if (invalid) return `Variable "$${invalid[1]}" got an invalid value (the value and GraphQL's reason are not recorded: they may hold a secret)`;
  let document: DocumentNode;
  try {
    document = parse(source, { noLocation: true });
  } catch {
    return message;
  }
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
  visitSecretValues(document, (value) => {
    if (value.kind === Kind.STRING) secrets.add(value.value);
  });
  const bound = boundVariables(document);
  for (const [name, value] of Object.entries(variables ?? {})) collect(value, bound.has(name), 0);
  let redacted = message;
  // As sent, and as graphql-js quotes a string (JSON escapes: a kubeconfig's newlines become \n).
  for (const secret of secrets) for (const form of [secret, JSON.stringify(secret).slice(1, -1)]) redacted = redacted.split(form).join(REDACTED);
  return redacted;
}

/** Calls `found` with the value of every argument or input field named like a secret, anywhere in `node`. */
function visitSecretValues(node: ASTNode, found: (value: ValueNode) => void): void {
  visit(node, {
    [Kind.ARGUMENT]: (arg) => {
      if (SECRET_FIELD.test(arg.name.value)) found(arg.value);
    },
    [Kind.OBJECT_FIELD]: (field) => {
      if (SECRET_FIELD.test(field.name.value)) found(field.value);
    },
  });
}

/** The operation's variables whose values GraphQL refuses for their declared types. */
function refusedVariables(schema: GraphQLSchema, operation: OperationDefinitionNode, variables: Record<string, unknown> | null | undefined): Set<string> {
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables ?? {}, { maxErrors: 100 });
  return new Set((coerced.errors ?? []).flatMap((error) => INVALID_VARIABLE.exec(error.message)?.[1] ?? []));
}

/** Variables passed to a secret argument or input field anywhere in the document (`kubeconfig: $k`). */
function boundVariables(document: DocumentNode): Set<string> {
  const bound = new Set<string>();
  visitSecretValues(document, (value) => {
    if (value.kind === Kind.VARIABLE) bound.add(value.name.value);
  });
  return bound;
}

function declaredVariables(document: DocumentNode): Set<string> {
  const declared = new Set<string>();
  for (const definition of document.definitions) {
    if (definition.kind !== Kind.OPERATION_DEFINITION) continue;
    for (const variable of definition.variableDefinitions ?? []) declared.add(variable.variable.name.value);
  }
  return declared;
}
