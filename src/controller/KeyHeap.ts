/** A min-heap of (readyAt, seq, key) entries: the waiting room of the delaying queue. */
export interface HeapEntry {
  readyAt: number;
  seq: number;
  key: string;
}

export class KeyHeap {
  private readonly items: HeapEntry[] = [];

  get size(): number {
    return this.items.length;
  }

  peek(): HeapEntry | undefined {
    return this.items[0];
  }

  push(entry: HeapEntry): void {
    const a = this.items;
    // Sift up with a hole: move parents down until the entry's place is found, then write it once.
    let i = a.length;
    a.push(entry);
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = a[p]!;
      if (!less(entry, parent)) break;
      a[i] = parent;
      i = p;
    }
    a[i] = entry;
  }

  pop(): HeapEntry | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    const n = a.length;
    if (n > 0 && last) {
      // Sift down with a hole from the root.
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const c = r < n && less(a[r]!, a[l]!) ? r : l;
        if (!less(a[c]!, last)) break;
        a[i] = a[c]!;
        i = c;
      }
      a[i] = last;
    }
    return top;
  }

  clear(): void {
    this.items.length = 0;
  }
}

function less(a: HeapEntry, b: HeapEntry): boolean {
  return a.readyAt < b.readyAt || (a.readyAt === b.readyAt && a.seq < b.seq);
}
