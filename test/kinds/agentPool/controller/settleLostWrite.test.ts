import { describe, expect, it } from 'vitest';
import { ConflictError, NotFoundError, UnavailableError } from '../../../../src/errors.js';
import { type LostWrite, settleLostWrite } from '../../../../src/kinds/agentPool/controller/settleLostWrite.js';

interface Obj {
  version: string;
  image?: string;
}

/** A lost write conditional on version 7, over an object that reads as `reads` say in turn and fences as `fence` says. */
function lost(reads: (Obj | undefined | Error)[], fence: (version: string) => Obj | Error = (version) => ({ version: `${version}+fence` })) {
  const fenced: string[] = [];
  const write: LostWrite<Obj> = {
    resourceVersion: '7',
    read: async () => {
      const next = reads.shift();
      if (next instanceof Error) throw next;
      return next;
    },
    versionOf: (object) => object.version,
    landed: (object) => object.image === 'wanted',
    fence: async (version) => {
      fenced.push(version);
      const answer = fence(version);
      if (answer instanceof Error) throw answer;
      return answer;
    },
  };
  return { write, fenced };
}

describe('settleLostWrite', () => {
  it('settles with the object as read when it has another version: the write landed or never can', async () => {
    const { write, fenced } = lost([{ version: '8' }]);
    expect(await settleLostWrite(write)).toEqual({ version: '8' });
    expect(fenced).toEqual([]);
  });

  it('settles without a fence when the object shows the write landed', async () => {
    const { write, fenced } = lost([{ version: '7', image: 'wanted' }]);
    expect(await settleLostWrite(write)).toEqual({ version: '7', image: 'wanted' });
    expect(fenced).toEqual([]);
  });

  it('fences an object unchanged since the write, conditional on that version, and returns it as fenced', async () => {
    const { write, fenced } = lost([{ version: '7' }]);
    expect(await settleLostWrite(write)).toEqual({ version: '7+fence' });
    expect(fenced).toEqual(['7']);
  });

  it('reads again after a conflict on the fence', async () => {
    let first = true;
    const { write, fenced } = lost([{ version: '7' }, { version: '9' }], (version) => {
      if (!first) return { version };
      first = false;
      return new ConflictError('changed');
    });
    expect(await settleLostWrite(write)).toEqual({ version: '9' });
    expect(fenced).toEqual(['7']);
  });

  it('says null for an object gone, when read or when fenced', async () => {
    expect(await settleLostWrite(lost([undefined]).write)).toBeNull();
    expect(await settleLostWrite(lost([{ version: '7' }], () => new NotFoundError('gone')).write)).toBeNull();
  });

  it('says unknown when the object cannot be read or fenced now, or keeps changing', async () => {
    expect(await settleLostWrite(lost([new UnavailableError('down')]).write)).toBe('unknown');
    expect(await settleLostWrite(lost([{ version: '7' }], () => new UnavailableError('timeout')).write)).toBe('unknown');
    const always = lost([{ version: '7' }, { version: '7' }, { version: '7' }, { version: '7' }], () => new ConflictError('changed'));
    expect(await settleLostWrite(always.write)).toBe('unknown');
    expect(always.fenced).toHaveLength(3);
  });
});
