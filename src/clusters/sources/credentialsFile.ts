import { constants } from 'node:fs';
import { mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { Document, isSeq, parseDocument, stringify, YAMLSeq } from 'yaml';
import { CredentialError, yamlErrorLine } from '../credentials.js';
import type { ClusterSourceReader, FoundCluster } from './types.js';

const TEMPLATE = `# rollplane member clusters (docs/adr/0048-member-clusters.md). Readable by rollplane's user only (mode 0600):
# rollplane refuses to read this file when its group or others may read it.
#
# clusters:
#   - name: edge-1              # a DNS-1123 label
#     labels: { env: prod, region: eu }
#     kubeconfig: |             # inline credentials only: no exec plugins, no file references
#       apiVersion: v1
#       ...
clusters: []
`;

/**
 * Creates the credentials file (mode 0600; its folder 0700 if it creates that too) when it does not exist yet, so that the one a user edits
 * starts private. Never changes an existing file.
 */
export async function ensureCredentialsFile(file: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  try {
    const handle = await open(file, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o600);
    await handle.writeFile(TEMPLATE);
    await handle.close();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/** Refuses a credentials file that its group or others may read or write: the credentials would be anyone's. */
export async function checkPrivate(file: string): Promise<void> {
  const mode = (await stat(file)).mode & 0o777;
  if ((mode & 0o077) !== 0) {
    throw new CredentialError(
      'FILE_PERMISSIONS',
      `the member cluster credentials file ${file} is readable or writable by its group or others (mode 0${mode.toString(8)}); run chmod 600 ${file}`,
    );
  }
}

/**
 * Entries the API wrote (`registerCluster`, docs/adr/0056-clusters-api.md) carry this mark: the API source owns them,
 * and this file's own source (FILE) skips them.
 */
export const API_MARK = { key: 'managedBy', value: 'rollplane-api' } as const;

/**
 * The credentials file as a YAML document (comments kept), for rollplane's own writes (the embedded simulator's
 * members, the API's registrations): refused when not private, or when it is not valid YAML (the source reports it).
 */
export async function readCredentialsDocument(file: string): Promise<{ document: Document; clusters: YAMLSeq }> {
  await checkPrivate(file);
  const text = await readFile(file, 'utf8');
  const document = parseDocument(text);
  if (document.errors.length > 0) throw new CredentialError('MALFORMED', `the member cluster credentials file ${file} is not valid YAML`);
  let clusters = document.get('clusters');
  if (clusters === undefined || clusters === null) {
    clusters = new YAMLSeq();
    document.set('clusters', clusters);
  }
  if (!isSeq(clusters)) throw new CredentialError('MALFORMED', `${file}: "clusters" must be a list`);
  return { document, clusters };
}

/** A YAML node for `value`, to put into the credentials document (a plain value would lose its block layout). */
export function yamlNode(value: unknown): ReturnType<Document['createNode']> {
  return new Document(value).contents as ReturnType<Document['createNode']>;
}

/** Replaces the credentials file whole with `document`: a 0600 file renamed over it, so no reader sees half of it. */
export async function replaceCredentialsFile(file: string, document: Document): Promise<void> {
  const clusters = document.get('clusters');
  if (isSeq(clusters)) clusters.flow = false;
  const next = `${file}.${process.pid}.tmp`;
  const handle = await open(next, constants.O_CREAT | constants.O_TRUNC | constants.O_WRONLY, 0o600);
  try {
    await handle.writeFile(document.toString());
  } finally {
    await handle.close();
  }
  await rename(next, file).catch(async (error: unknown) => {
    await rm(next, { force: true });
    throw error;
  });
}

/**
 * The embedded mode's credentials file under the data directory: YAML `clusters: [{ name, labels, kubeconfig }]`,
 * the kubeconfig as text or as a map. Read only when private (mode 0600 or stricter).
 */
export function credentialsFile(file: string, source: 'FILE' | 'API' = 'FILE'): ClusterSourceReader {
  // FILE reads a person's entries (and the embedded simulator's); API reads those marked as the API's.
  const owns = (entry: unknown) => ((entry as Record<string, unknown> | null)?.[API_MARK.key] === API_MARK.value) === (source === 'API');
  return {
    source,
    async read() {
      // A removed file registers nothing: its clusters are deregistered (each said in the log), as a removed Secret's
      // are. Before, it read as "could not be read" and its members stayed for good (attack 13, F8).
      try {
        await checkPrivate(file);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw error;
      }
      const text = await readFile(file, 'utf8');
      const parsed = parseDocument(text, { prettyErrors: false });
      if (parsed.errors.length > 0) {
        throw new CredentialError(
          'MALFORMED',
          `the member cluster credentials file ${file} is not valid YAML (line ${yamlErrorLine(text, parsed.errors[0]!)})`,
        );
      }
      const document = (parsed.toJS() ?? {}) as { clusters?: unknown };
      const clusters = document.clusters ?? [];
      if (!Array.isArray(clusters)) throw new CredentialError('MALFORMED', `${file}: "clusters" must be a list`);
      return clusters.flatMap((entry: unknown, i): FoundCluster[] => {
        if (!owns(entry)) return [];
        const { name, labels, kubeconfig } = (entry ?? {}) as { name?: unknown; labels?: unknown; kubeconfig?: unknown };
        const found: FoundCluster = {
          registration: {
            name: typeof name === 'string' ? name : '',
            labels:
              labels && typeof labels === 'object' && !Array.isArray(labels) ? Object.fromEntries(Object.entries(labels).map(([k, v]) => [k, String(v)])) : {},
            source,
            sourceRef: `${file}#clusters[${i}]`,
          },
          kubeconfig: typeof kubeconfig === 'string' ? kubeconfig : kubeconfig && typeof kubeconfig === 'object' ? stringify(kubeconfig) : '',
        };
        return [found];
      });
    },
  };
}
