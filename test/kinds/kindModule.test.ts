import { describe, expect, it } from 'vitest';
import { ROLLOUT_KINDS } from '../../src/domain/events.js';
import { KIND_CONTRACTS, ROLLOUT_KIND_MODULES } from '../../src/kinds/index.js';

describe('the registered rollout kinds', () => {
  it('register each kind once, and hand the domain each one’s contract (ADR 0045: no second list of kinds)', () => {
    expect(ROLLOUT_KIND_MODULES.map((m) => m.kind).sort()).toEqual([...ROLLOUT_KINDS].sort());
    for (const module of ROLLOUT_KIND_MODULES) expect(KIND_CONTRACTS[module.kind]).toBe(module.contract);
    for (const kind of ROLLOUT_KINDS) expect(KIND_CONTRACTS[kind].kind).toBe(kind);
  });
});
