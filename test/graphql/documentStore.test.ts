import { parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { BoundedDocumentStore, BYTES_PER_TOKEN, documentBytes, MAX_CACHED_SOURCE_CHARS } from '../../src/graphql/documentStore.js';

/** Issue 34, finding 1: Apollo's store weighed a document padded with a 250 KB comment at 699 bytes. */
describe('BoundedDocumentStore', () => {
  const padded = (i: number, padding: number) => parse(`# ${i}\n#${'x'.repeat(padding)}\n{ serverInfo { version } }`);

  it('weighs a document by its source text and tokens, not by its JSON', () => {
    const document = padded(0, 20_000);
    expect(JSON.stringify(document).length).toBeLessThan(1_000);
    expect(documentBytes(document)).toBeGreaterThanOrEqual(2 * 20_000);
    const plain = parse('{ serverInfo { version } }');
    // { serverInfo { version } } and the start and end tokens.
    expect(documentBytes(plain)).toBe(2 * plain.loc!.source.body.length + 8 * BYTES_PER_TOKEN);
  });

  it('never keeps a document longer than its source limit', async () => {
    const store = new BoundedDocumentStore(64 * 1024 * 1024);
    await store.set('big', padded(1, MAX_CACHED_SOURCE_CHARS));
    await store.set('small', padded(2, 100));
    expect(await store.get('big')).toBeUndefined();
    expect(await store.get('small')).toBeDefined();
    expect(store.size().entries).toBe(1);
  });

  it('stays within its budget under 2,000 distinct documents, evicting the least recently used', async () => {
    const budget = 1024 * 1024;
    const store = new BoundedDocumentStore(budget);
    await store.set('kept', padded(-1, 10_000));
    for (let i = 0; i < 2_000; i++) {
      await store.set(`d${i}`, padded(i, 10_000));
      // Used again and again, so it stays while the others come and go.
      expect(await store.get('kept')).toBeDefined();
      expect(store.size().bytes).toBeLessThanOrEqual(budget);
    }
    expect(await store.get('d0')).toBeUndefined();
    expect(await store.get('d1999')).toBeDefined();
    expect(store.size().entries).toBeLessThan(60);
  });

  it('counts a replaced or deleted entry once', async () => {
    const store = new BoundedDocumentStore(1024 * 1024);
    const document = padded(3, 1_000);
    await store.set('k', document);
    await store.set('k', document);
    expect(store.size().bytes).toBe(documentBytes(document));
    expect(await store.delete('k')).toBe(true);
    expect(store.size()).toEqual({ entries: 0, bytes: 0 });
  });
});
