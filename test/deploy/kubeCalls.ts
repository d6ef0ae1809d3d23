import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { AppsV1Api, CoordinationV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';

/**
 * What the reconcilers' code asks of the Kubernetes API, read from the source: every client-node call on the typed
 * APIs (by method name) and every informer watch path. Custom-object calls and paths name their group and plural
 * through constants, which are resolved from `export const X = '…'` declarations in the scanned files.
 */

export interface KubeCall {
  group: string;
  resource: string;
  verb: string;
  /** file:line of the call site. */
  at: string;
}

const TYPED_APIS: [string, { prototype: object }][] = [
  ['', CoreV1Api],
  ['apps', AppsV1Api],
  ['coordination.k8s.io', CoordinationV1Api],
];

const VERB_OF_PREFIX: Record<string, string> = {
  list: 'list',
  read: 'get',
  get: 'get',
  create: 'create',
  patch: 'patch',
  replace: 'update',
  delete: 'delete',
};

function methodsOf(api: { prototype: object }): Set<string> {
  return new Set(Object.getOwnPropertyNames(api.prototype).filter((name) => name !== 'constructor'));
}

export function sourceFiles(root: string, dirs: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir)) {
      const full = path.join(dir, entry);
      if (statSync(full).isDirectory()) walk(full);
      else if (full.endsWith('.ts') && !full.endsWith('.d.ts')) out.push(full);
    }
  };
  for (const dir of dirs) walk(path.join(root, dir));
  return out.sort();
}

/** `DeploymentStatus` → deployments/status, `PodForAllNamespaces` → pods, `Namespace` → namespaces. */
function resourceOfKind(kindPart: string): string {
  let rest = kindPart.replace(/ForAllNamespaces$/, '');
  let sub = '';
  if (rest.endsWith('Status')) {
    rest = rest.slice(0, -'Status'.length);
    sub = '/status';
  }
  const lower = rest.toLowerCase();
  const plural = lower.endsWith('s') ? lower : `${lower}s`;
  return `${plural}${sub}`;
}

/** The text of a call's argument list, from the `(` at `open` to its matching `)`. */
function argumentsAt(text: string, open: number): string {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === '(') depth++;
    else if (text[i] === ')' && --depth === 0) return text.slice(open + 1, i);
  }
  return text.slice(open + 1);
}

const lineOf = (text: string, index: number) => text.slice(0, index).split('\n').length;

export function scanKubeCalls(root: string, dirs: readonly string[]): { calls: KubeCall[]; unresolved: string[] } {
  const files = sourceFiles(root, dirs);
  const texts = new Map(files.map((f) => [f, readFileSync(f, 'utf8')]));
  const constants = new Map<string, string>();
  for (const text of texts.values()) {
    for (const m of text.matchAll(/export const (\w+)\s*=\s*'([^']*)'/g)) constants.set(m[1]!, m[2]!);
  }
  const resolve = (template: string) => template.replace(/\$\{(\w+)\}/g, (whole, name: string) => constants.get(name) ?? whole);
  const typed = TYPED_APIS.map(([group, api]) => [group, methodsOf(api)] as const);
  const customMethods = methodsOf(CustomObjectsApi);

  const calls: KubeCall[] = [];
  const unresolved: string[] = [];
  /** The group and plural a custom-resource argument list names (`group: X, plural: Y`, or `...spread` of a group). */
  const customResourceOf = (text: string, args: string) => {
    const plural = /plural:\s*(\w+)/.exec(args)?.[1];
    let groupName = /group:\s*(\w+)/.exec(args)?.[1];
    const spread = /\.\.\.(\w+)/.exec(args)?.[1];
    if (!groupName && spread) groupName = new RegExp(`const ${spread}\\s*=\\s*\\{\\s*group:\\s*(\\w+)`).exec(text)?.[1];
    const resource = plural ? constants.get(plural) : undefined;
    const group = groupName ? constants.get(groupName) : undefined;
    return resource !== undefined && group !== undefined ? { group, resource } : undefined;
  };
  for (const [file, text] of texts) {
    const rel = path.relative(root, file);
    // The kinds' shared informer factory (src/controllers/informers.ts) lists and watches whatever custom resource it
    // is given: its own list call and path are generic, and each `informers.custom(…)` call site names the resource.
    const isInformerFactory = rel === path.join('src', 'controllers', 'informers.ts');
    for (const m of text.matchAll(/\.informers\.custom(?:<[^>()]*>)?\(/g)) {
      const at = `${rel}:${lineOf(text, m.index!)}`;
      const found = customResourceOf(text, argumentsAt(text, m.index! + m[0].length - 1));
      if (!found) unresolved.push(`${at} informers.custom`);
      else calls.push({ ...found, verb: 'list', at }, { ...found, verb: 'watch', at });
    }
    for (const m of text.matchAll(/\.((list|read|get|create|patch|replace|delete)(\w+))\(/g)) {
      const [, method, prefix, rest] = m as unknown as [string, string, string, string];
      const at = `${rel}:${lineOf(text, m.index!)}`;
      const verb = VERB_OF_PREFIX[prefix]!;
      const api = typed.find(([, methods]) => methods.has(method));
      if (api) {
        calls.push({ group: api[0], resource: resourceOfKind(rest.replace(/^(Namespaced|Cluster)/, '')), verb, at });
        continue;
      }
      if (!customMethods.has(method)) continue;
      const args = argumentsAt(text, m.index! + m[0].length - 1);
      if (isInformerFactory && args.includes('...resource')) continue;
      const found = customResourceOf(text, args);
      if (!found) {
        unresolved.push(`${at} ${method}`);
        continue;
      }
      calls.push({ group: found.group, resource: method.endsWith('Status') ? `${found.resource}/status` : found.resource, verb, at });
    }
    // Informers list and then watch their path: every literal of a `path:` (a conditional may give two).
    const paths = [...text.matchAll(/path:([^\n]*)/g)].flatMap((line) =>
      [...line[1]!.matchAll(/[`'](\/apis?\/[^`']*)[`']/g)].map((literal) => ({ index: line.index!, template: literal[1]! })),
    );
    for (const { index, template } of paths) {
      if (isInformerFactory && template.includes('${resource.')) continue;
      const at = `${rel}:${lineOf(text, index)}`;
      const resolved = resolve(template).replace(/\/namespaces\/[^/]+/, '');
      const parts = resolved.split('/').filter(Boolean);
      const parsed =
        parts[0] === 'api' && parts.length === 3
          ? { group: '', resource: parts[2]! }
          : parts[0] === 'apis' && parts.length === 4
            ? { group: parts[1]!, resource: parts[3]! }
            : undefined;
      if (!parsed || resolved.includes('${')) {
        unresolved.push(`${at} informer path ${template}`);
        continue;
      }
      calls.push({ ...parsed, verb: 'list', at }, { ...parsed, verb: 'watch', at });
    }
    // Generic object access cannot be resolved by name; none is expected in the reconcilers.
    for (const m of text.matchAll(/\.objects\.(list|read|create|patch|replace|delete)\(|resourceInformer\(/g)) {
      if (rel.endsWith(path.join('controller', 'resourceInformer.ts')) || rel.endsWith(path.join('controller', 'index.ts'))) continue;
      unresolved.push(`${rel}:${lineOf(text, m.index!)} generic KubernetesObjectApi access`);
    }
  }
  return { calls, unresolved };
}
