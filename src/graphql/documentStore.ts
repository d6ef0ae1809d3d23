import type { DocumentStore } from '@apollo/server';
import type { DocumentNode, Token } from 'graphql';

/**
 * Apollo's store of parsed and validated documents, bounded by the heap they really take (issue 34, finding 1).
 *
 * Apollo's default store sizes an entry by `JSON.stringify(document)`, which leaves out what a parsed document keeps
 * alive: its source text (every AST node's `loc` holds the `Source`) and the linked list of every lexical token. A
 * one-field query padded with a 250 KB comment weighed 699 bytes there, so distinct padded queries grew the heap by
 * 250 KB each until the process died (1,700 of them under the Deployment's 512 MB cap). Measured here: a parsed
 * document takes its source text plus about 300 bytes per token (153 KB for the CLI's 2.9 KB, 507-token operations
 * file, against 38 KB of JSON).
 *
 * So an entry counts its source (two bytes a character: a string with any character past Latin-1 is stored so) and
 * {@link BYTES_PER_TOKEN} per token, and a document whose source is longer than {@link MAX_CACHED_SOURCE_CHARS} is never
 * kept: no client of rollplane sends one that large, and an attacker's would only evict the others. Least recently
 * used entries go first.
 */

/** Heap per lexical token of a parsed document, AST included (measured: 297–311 bytes; rounded up). */
export const BYTES_PER_TOKEN = 320;

/** What the store may take: the UI's, the CLI's and CI's documents take a few megabytes together. */
export const DOCUMENT_STORE_BYTES = 16 * 1024 * 1024;

/** Documents longer than this (source characters, comments and whitespace included) are parsed every time. */
export const MAX_CACHED_SOURCE_CHARS = 32 * 1024;

/** The heap a parsed document takes, estimated from its source and tokens (see the module comment). */
export function documentBytes(document: DocumentNode): number {
  const loc = document.loc;
  if (!loc) return BYTES_PER_TOKEN; // parsed with noLocation: the AST only, which a token count cannot tell
  let tokens = 0;
  for (let token: Token | null = loc.startToken; token; token = token.next) tokens++;
  return 2 * loc.source.body.length + BYTES_PER_TOKEN * tokens;
}

export class BoundedDocumentStore implements DocumentStore {
  /** By key, least recently used first (a hit moves its entry to the end). */
  private readonly entries = new Map<string, { document: DocumentNode; bytes: number }>();
  private bytes = 0;

  constructor(private readonly budgetBytes: number) {
    if (!Number.isFinite(budgetBytes) || budgetBytes < 0) throw new RangeError(`document store budget must be a non-negative number, got ${budgetBytes}`);
  }

  async get(key: string): Promise<DocumentNode | undefined> {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.document;
  }

  async set(key: string, document: DocumentNode): Promise<void> {
    if ((document.loc?.source.body.length ?? 0) > MAX_CACHED_SOURCE_CHARS) return;
    const bytes = documentBytes(document);
    // One entry may take at most an eighth of the budget: a few large documents must not evict every other.
    if (bytes > this.budgetBytes / 8) return;
    await this.delete(key);
    for (const [oldest, entry] of this.entries) {
      if (this.bytes + bytes <= this.budgetBytes) break;
      this.entries.delete(oldest);
      this.bytes -= entry.bytes;
    }
    this.entries.set(key, { document, bytes });
    this.bytes += bytes;
  }

  async delete(key: string): Promise<boolean> {
    const entry = this.entries.get(key);
    if (!entry) return false;
    this.entries.delete(key);
    this.bytes -= entry.bytes;
    return true;
  }

  /** Kept documents and the heap they take (estimated). */
  size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }
}
