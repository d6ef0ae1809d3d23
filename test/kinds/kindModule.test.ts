import { describe, expect, it } from 'vitest';
import { ROLLOUT_KIND_MODULES } from '../../src/kinds/index.js';
import { ROLLOUT_KINDS } from '../../src/domain/events.js';
import { KIND_CONTRACTS } from '../../src/domain/kinds/index.js';

describe('the registered rollout kinds', () => {
  it('register each kind once, with the domain’s contract for it', () => {
    expect(ROLLOUT_KIND_MODULES.map((m) => m.kind).sort()).toEqual([...ROLLOUT_KINDS].sort());
    for (const module of ROLLOUT_KIND_MODULES) expect(module.contract).toBe(KIND_CONTRACTS[module.kind]);
  });
});
