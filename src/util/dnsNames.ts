/**
 * The name formats of Kubernetes (k8s.io/apimachinery util/validation and api/validate/content), with their exact
 * messages: DNS-1123 subdomains and labels, DNS-1035 labels, label keys and values, config keys, and the
 * `namespace/name` references rollplane takes. Each `is…` returns the list of problems, empty when the value is
 * valid, as upstream does; `namesProblem` makes one message of them. The one place that spells these formats: the
 * simulator's admission, the API's inputs, the configuration and the CLI all check names here, so that a name
 * rollplane accepts is one the API server accepts, and its refusal reads as the API server's would.
 */

const DNS1123_LABEL_FMT = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_SUBDOMAIN_FMT = `${DNS1123_LABEL_FMT}(\\.${DNS1123_LABEL_FMT})*`;
const DNS1035_LABEL_FMT = '[a-z]([-a-z0-9]*[a-z0-9])?';
const LABEL_KEY_FMT = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const LABEL_VALUE_FMT = `(${LABEL_KEY_FMT})?`;
const CONFIG_KEY_FMT = '[-._a-zA-Z0-9]+';

const DNS1123_LABEL = new RegExp(`^${DNS1123_LABEL_FMT}$`);
const DNS1123_SUBDOMAIN = new RegExp(`^${DNS1123_SUBDOMAIN_FMT}$`);
const DNS1035_LABEL = new RegExp(`^${DNS1035_LABEL_FMT}$`);
const LABEL_KEY = new RegExp(`^${LABEL_KEY_FMT}$`);
const LABEL_VALUE = new RegExp(`^${LABEL_VALUE_FMT}$`);
const CONFIG_KEY = new RegExp(`^${CONFIG_KEY_FMT}$`);

export function maxLenError(length: number): string {
  return `must be no more than ${length} characters`;
}

export function regexError(message: string, format: string, ...examples: string[]): string {
  if (examples.length === 0) return `${message} (regex used for validation is '${format}')`;
  return `${message} (e.g. ${examples.map((e) => `'${e}', `).join(' or ')}regex used for validation is '${format}')`;
}

export function isDns1123Label(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 63) errs.push(maxLenError(63));
  if (!DNS1123_LABEL.test(value)) {
    if (DNS1123_SUBDOMAIN.test(value)) errs.push('must not contain dots');
    else
      errs.push(
        regexError(
          "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
          DNS1123_LABEL_FMT,
          'my-name',
          '123-abc',
        ),
      );
  }
  return errs;
}

export function isDns1123Subdomain(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 253) errs.push(maxLenError(253));
  if (!DNS1123_SUBDOMAIN.test(value)) {
    errs.push(
      regexError(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        DNS1123_SUBDOMAIN_FMT,
        'example.com',
      ),
    );
  }
  return errs;
}

export function isDns1035Label(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 63) errs.push(maxLenError(63));
  if (!DNS1035_LABEL.test(value)) {
    errs.push(
      regexError(
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
        DNS1035_LABEL_FMT,
        'my-name',
        'abc-123',
      ),
    );
  }
  return errs;
}

const LABEL_KEY_MESSAGE = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/** Label and annotation keys repeat across objects (app, pod-template-hash, ...): their verdicts are kept, boundedly. */
const labelKeyVerdicts = new Map<string, readonly string[]>();
const NO_ERRORS: readonly string[] = Object.freeze([]);

/** A label key (a "qualified name"): an optional DNS-1123 subdomain prefix and '/', then a name of at most 63. */
export function isLabelKey(value: string): readonly string[] {
  let verdict = labelKeyVerdicts.get(value);
  if (verdict === undefined) {
    const errs = checkLabelKey(value);
    verdict = errs.length === 0 ? NO_ERRORS : errs;
    if (labelKeyVerdicts.size >= 10_000) labelKeyVerdicts.clear();
    labelKeyVerdicts.set(value, verdict);
  }
  return verdict;
}

function checkLabelKey(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split('/');
  let name: string;
  if (parts.length === 1) {
    name = parts[0]!;
  } else if (parts.length === 2) {
    const prefix = parts[0]!;
    name = parts[1]!;
    if (prefix.length === 0) errs.push('prefix part must be non-empty');
    else errs.push(...isDns1123Subdomain(prefix).map((m) => `prefix part ${m}`));
  } else {
    return [
      `a valid label key ${regexError(LABEL_KEY_MESSAGE, LABEL_KEY_FMT, 'MyName', 'my.name', '123-abc')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (name.length > 63) errs.push(`name part ${maxLenError(63)}`);
  if (!LABEL_KEY.test(name)) errs.push(`name part ${regexError(LABEL_KEY_MESSAGE, LABEL_KEY_FMT, 'MyName', 'my.name', '123-abc')}`);
  return errs;
}

export function isLabelValue(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 63) errs.push(maxLenError(63));
  if (!LABEL_VALUE.test(value)) {
    errs.push(
      regexError(
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
        LABEL_VALUE_FMT,
        'MyValue',
        'my_value',
        '12345',
      ),
    );
  }
  return errs;
}

/** A key of a ConfigMap's or Secret's data. */
export function isConfigMapKey(value: string): string[] {
  const errs: string[] = [];
  if (value.length > 253) errs.push(maxLenError(253));
  if (!CONFIG_KEY.test(value))
    errs.push(regexError("a valid config key must consist of alphanumeric characters, '-', '_' or '.'", CONFIG_KEY_FMT, 'key.name', 'KEY_NAME', 'key-name'));
  if (value === '.') errs.push("must not be '.'");
  else if (value === '..') errs.push("must not be '..'");
  else if (value.startsWith('..')) errs.push("must not start with '..'");
  return errs;
}

/** apimachinery's path-segment rule (RBAC object names). */
export function isValidPathSegmentName(value: string): string[] {
  if (value === '.' || value === '..') return [`may not be '${value}'`];
  for (const illegal of ['/', '%']) if (value.includes(illegal)) return [`may not contain '${illegal}'`];
  return [];
}

/** The problems of one value as one message (Kubernetes lists them apart; an AppError carries one), or undefined. */
export function namesProblem(problems: readonly string[]): string | undefined {
  return problems.length === 0 ? undefined : problems.join('; ');
}

/** True when `check` finds nothing wrong with `value` (for the callers that only need a yes or no). */
export function isValidName(check: (value: string) => readonly string[], value: string): boolean {
  return check(value).length === 0;
}

/**
 * `namespace/name` of a namespaced object: a namespace (a DNS-1123 label) and, by default, a name that is a DNS-1123
 * subdomain (most kinds'); undefined when it is not one.
 */
export function parseNamespacedName(
  text: string,
  nameCheck: (value: string) => readonly string[] = isDns1123Subdomain,
): { namespace: string; name: string } | undefined {
  const parts = text.split('/');
  if (parts.length !== 2) return undefined;
  const [namespace, name] = parts as [string, string];
  return isValidName(isDns1123Label, namespace) && isValidName(nameCheck, name) ? { namespace, name } : undefined;
}
