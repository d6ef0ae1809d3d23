import { ValidationError } from '../errors.js';

/**
 * OCI image references as the distribution grammar defines them:
 *   reference := name [ ":" tag ] [ "@" digest ]
 *   name      := [ domain "/" ] path-component ( "/" path-component )*
 *   domain    := host [ ":" port ]   (a first component with ".", ":" or equal to "localhost")
 * Parsed strictly, so that a CI typo is refused at the API instead of ending as ImagePullBackOff on every node.
 */
export interface ImageReference {
  /** Registry host[:port]; undefined for Docker Hub short names. */
  registry?: string;
  /** Repository path without the registry. */
  repository: string;
  tag?: string;
  /** `sha256:<64 hex>`. */
  digest?: string;
}

const MAX_LENGTH = 4096;
const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const DOMAIN_COMPONENT = /^(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])$/;
const TAG = /^[\w][\w.-]{0,127}$/;
const DIGEST = /^sha256:[a-f0-9]{64}$/;

export function parseImageReference(reference: string, field = 'image'): ImageReference {
  const fail = (reason: string): never => {
    throw new ValidationError(field, `"${reference.length > 80 ? `${reference.slice(0, 80)}…` : reference}" is not a valid image reference: ${reason}`);
  };
  if (reference.length === 0) fail('it is empty');
  if (reference.length > MAX_LENGTH) fail(`it is longer than ${MAX_LENGTH} characters`);
  if (/\s/.test(reference)) fail('it contains whitespace');

  let rest = reference;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) fail('the digest must be sha256: followed by 64 lowercase hex digits');
  }
  let tag: string | undefined;
  const lastSlash = rest.lastIndexOf('/');
  const lastColon = rest.lastIndexOf(':');
  // A ":" after the last "/" starts the tag; one before it belongs to the registry's port.
  if (lastColon > lastSlash) {
    tag = rest.slice(lastColon + 1);
    rest = rest.slice(0, lastColon);
    if (!TAG.test(tag)) fail('the tag must be 1 to 128 letters, digits, "_", "." or "-", not starting with "." or "-"');
  }
  const components = rest.split('/');
  let registry: string | undefined;
  const first = components[0]!;
  if (components.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost')) {
    registry = components.shift();
    const [host, port, ...extra] = registry!.split(':');
    if (extra.length > 0 || !host || !host.split('.').every((part) => DOMAIN_COMPONENT.test(part))) fail(`"${registry}" is not a valid registry host`);
    if (port !== undefined && (!/^\d{1,5}$/.test(port) || Number(port) > 65535)) fail(`"${port}" is not a valid registry port`);
  }
  if (components.length === 0 || components.some((c) => c.length === 0)) fail('the repository path has an empty component');
  for (const component of components) {
    if (!PATH_COMPONENT.test(component)) fail(`path component "${component}" must be lowercase letters and digits separated by ".", "_", "__" or "-"`);
  }
  const repository = components.join('/');
  if (repository.length > 255) fail('the repository name is longer than 255 characters');
  return { ...(registry ? { registry } : {}), repository, ...(tag ? { tag } : {}), ...(digest ? { digest } : {}) };
}

/** The image's version as rollplane compares it: the tag (default `latest`, as upstream), or the digest. */
export function imageTag(reference: string): string {
  const parsed = parseImageReference(reference);
  return parsed.tag ?? (parsed.digest ? parsed.digest : 'latest');
}

/** Same repository (registry + path), whatever the tag or digest. */
export function sameRepository(a: string, b: string): boolean {
  const pa = parseImageReference(a);
  const pb = parseImageReference(b);
  return pa.repository === pb.repository && pa.registry === pb.registry;
}

interface SemVer {
  major: number;
  minor: number;
  patch: number;
  prerelease: string[];
}

/** `v1.2.3`, `1.2.3`, `1.2.3-rc.1`, `1.2` (patch 0). Undefined when the tag is not semver-like. */
export function parseSemverTag(tag: string): SemVer | undefined {
  const match = /^v?(\d+)\.(\d+)(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/.exec(tag);
  if (!match) return undefined;
  return { major: Number(match[1]), minor: Number(match[2]), patch: Number(match[3] ?? 0), prerelease: match[4] ? match[4].split('.') : [] };
}

/** Semver precedence: negative when a < b. */
export function compareSemver(a: SemVer, b: SemVer): number {
  for (const key of ['major', 'minor', 'patch'] as const) if (a[key] !== b[key]) return a[key] - b[key];
  if (a.prerelease.length === 0 || b.prerelease.length === 0) return b.prerelease.length - a.prerelease.length;
  for (let i = 0; i < Math.max(a.prerelease.length, b.prerelease.length); i++) {
    const x = a.prerelease[i];
    const y = b.prerelease[i];
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    const nx = /^\d+$/.test(x) ? Number(x) : undefined;
    const ny = /^\d+$/.test(y) ? Number(y) : undefined;
    if (nx !== undefined && ny !== undefined) {
      if (nx !== ny) return nx - ny;
    } else if (nx !== undefined) return -1;
    else if (ny !== undefined) return 1;
    else if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

/** True when `to` is a semver downgrade of `from` in the same repository (unknown or non-semver tags: false). */
export function isDowngrade(from: string, to: string): boolean {
  if (!sameRepository(from, to)) return false;
  const a = parseSemverTag(imageTag(from));
  const b = parseSemverTag(imageTag(to));
  return a !== undefined && b !== undefined && compareSemver(b, a) < 0;
}
