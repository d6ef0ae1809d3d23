import { afterEach, describe, expect, it, vi } from 'vitest';
import { TargetNotifier, type ObjectEvents } from '../../src/controllers/TargetNotifier.js';

type Obj = { ns: string; name: string; v: number; other?: number };

function source(): ObjectEvents<Obj> & { emit: { add(o: Obj): void; update(a: Obj, b: Obj): void; remove(o: Obj): void } } {
  const handlers: Parameters<ObjectEvents<Obj>['addEventHandler']>[0][] = [];
  return {
    addEventHandler: (h) => handlers.push(h),
    emit: {
      add: (o) => {
        for (const h of handlers) h.onAdd?.(o);
      },
      update: (a, b) => {
        for (const h of handlers) h.onUpdate?.(a, b);
      },
      remove: (o) => {
        for (const h of handlers) h.onDelete?.(o);
      },
    },
  };
}

describe('TargetNotifier', () => {
  afterEach(() => vi.useRealTimers());

  it('sends each notification at once when it has no window', () => {
    const sent: string[] = [];
    const notifier = new TargetNotifier('VIRTUAL_CLUSTER', (kind, ns, name) => sent.push(`${kind} ${ns}/${name}`));
    notifier.notify({ namespace: 'a', name: 'x' }, { name: 'node-1' });
    notifier.notify({ namespace: 'a', name: 'x' });
    expect(sent).toEqual(['VIRTUAL_CLUSTER a/x', 'VIRTUAL_CLUSTER /node-1', 'VIRTUAL_CLUSTER a/x']);
  });

  it('coalesces a burst into one notification per target per window', () => {
    vi.useFakeTimers();
    const sent: string[] = [];
    const notifier = new TargetNotifier('AGENT_POOL', (_kind, ns, name) => sent.push(`${ns}/${name}`), { windowMs: () => 100 });
    for (let i = 0; i < 12; i++) notifier.notify({ namespace: 'default', name: 'pool-1' });
    notifier.notify({ namespace: 'default', name: 'pool-2' });
    expect(sent).toEqual([]);
    vi.advanceTimersByTime(100);
    expect(sent).toEqual(['default/pool-1', 'default/pool-2']);
    notifier.notify({ namespace: 'default', name: 'pool-1' });
    vi.advanceTimersByTime(100);
    expect(sent).toEqual(['default/pool-1', 'default/pool-2', 'default/pool-1']);
  });

  it('watches adds, deletes and the updates that change the signature (every update without one)', () => {
    const sent: string[] = [];
    const notifier = new TargetNotifier('AGENT_POOL', (_kind, ns, name) => sent.push(`${ns}/${name}`));
    const withSignature = source();
    const everyUpdate = source();
    const refs = (o: Obj) => [{ namespace: o.ns, name: o.name }];
    notifier.watch(withSignature, refs, (o) => String(o.v));
    notifier.watch(everyUpdate, refs);
    const a = { ns: 'n', name: 'a', v: 1 };
    withSignature.emit.add(a);
    withSignature.emit.update(a, { ...a, other: 2 });
    withSignature.emit.update(a, { ...a, v: 2 });
    withSignature.emit.remove(a);
    everyUpdate.emit.update(a, { ...a, other: 2 });
    expect(sent).toEqual(['n/a', 'n/a', 'n/a', 'n/a']);
  });
});
