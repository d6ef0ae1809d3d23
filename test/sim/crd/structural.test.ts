import { describe, expect, it } from 'vitest';
import { compileRule, RuleEvalError } from '../../../src/sim/crd/celRules.js';
import { applyDefaults } from '../../../src/sim/crd/defaults.js';
import { dropNulls, prune } from '../../../src/sim/crd/prune.js';
import type { JsonSchemaProps } from '../../../src/sim/crd/schema.js';

const schema: JsonSchemaProps = {
  type: 'object',
  properties: {
    spec: {
      type: 'object',
      properties: {
        items: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' } } } },
        open: {
          type: 'object',
          'x-kubernetes-preserve-unknown-fields': true,
          properties: { known: { type: 'object', properties: { a: { type: 'string' } } } },
        },
        bare: { type: 'object' },
        map: { type: 'object', additionalProperties: { type: 'object', properties: { v: { type: 'integer' } } } },
        anyList: { type: 'array', 'x-kubernetes-preserve-unknown-fields': true },
        embedded: { type: 'object', 'x-kubernetes-embedded-resource': true, 'x-kubernetes-preserve-unknown-fields': true },
      },
    },
  },
};

describe('structural pruning', () => {
  it('removes undeclared fields everywhere, with their paths, and keeps type meta and the ObjectMeta fields at the root', () => {
    const object: any = {
      apiVersion: 'x/v1',
      kind: 'X',
      metadata: { name: 'n', anything: 1 },
      top: 1,
      spec: { items: [{ name: 'a', junk: 1 }, { junk: 2 }], bare: { gone: true }, map: { k: { v: 1, w: 2 } }, anyList: [{ keep: 1 }] },
    };
    expect(prune(object, schema)).toEqual(['metadata.anything', 'top', 'spec.items[0].junk', 'spec.items[1].junk', 'spec.bare.gone', 'spec.map.k.w']);
    expect(object).toEqual({
      apiVersion: 'x/v1',
      kind: 'X',
      metadata: { name: 'n' },
      spec: { items: [{ name: 'a' }, {}], bare: {}, map: { k: { v: 1 } }, anyList: [{ keep: 1 }] },
    });
  });

  it('under x-kubernetes-preserve-unknown-fields keeps unknown fields but still prunes inside declared ones', () => {
    const object: any = { spec: { open: { extra: { deep: 1 }, known: { a: 'x', b: 'y' } } } };
    expect(prune(object, schema)).toEqual(['spec.open.known.b']);
    expect(object.spec.open).toEqual({ extra: { deep: 1 }, known: { a: 'x' } });
  });

  it("keeps an embedded resource's apiVersion and kind and trims its metadata to ObjectMeta", () => {
    const object: any = { spec: { embedded: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', nope: 1 }, spec: { x: 1 } } } };
    expect(prune(object, schema)).toEqual(['spec.embedded.metadata.nope']);
    expect(object.spec.embedded).toEqual({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { x: 1 } });
  });

  it('drops nulls of fields that are neither nullable nor defaulted', () => {
    const s: JsonSchemaProps = {
      type: 'object',
      properties: { a: { type: 'string' }, b: { type: 'string', nullable: true }, c: { type: 'string', default: 'd' } },
    };
    const object: any = { a: null, b: null, c: null };
    dropNulls(object, s);
    expect(object).toEqual({ b: null, c: null });
    applyDefaults(object, s);
    expect(object).toEqual({ b: null, c: 'd' });
  });
});

describe('structural defaulting', () => {
  it('defaults top-down, inside defaulted objects, list items and map values, and copies each default', () => {
    const shared = { tags: ['x'] };
    const s: JsonSchemaProps = {
      type: 'object',
      properties: {
        a: {
          type: 'object',
          default: {},
          properties: {
            b: { type: 'integer', default: 1 },
            c: { type: 'object', default: shared, properties: { tags: { type: 'array', items: { type: 'string' } } } },
          },
        },
        list: { type: 'array', items: { type: 'object', properties: { on: { type: 'boolean', default: true } } } },
        map: { type: 'object', additionalProperties: { type: 'object', properties: { n: { type: 'integer', default: 0 } } } },
      },
    };
    const object: any = { list: [{}, { on: false }], map: { k: {} } };
    applyDefaults(object, s);
    expect(object).toEqual({ a: { b: 1, c: { tags: ['x'] } }, list: [{ on: true }, { on: false }], map: { k: { n: 0 } } });
    object.a.c.tags.push('y');
    expect(shared.tags).toEqual(['x']);
  });
});

describe('the CEL subset of x-kubernetes-validations', () => {
  const check = (rule: string, self: unknown, oldSelf?: unknown) => compileRule(rule)!.evaluate(self, oldSelf);

  it('evaluates the rules the upstream IPPool CRD carries', () => {
    expect(check('self == oldSelf', '10.0.0.0/24', '10.0.0.0/24')).toBe(true);
    expect(check('self == oldSelf', ['a'], ['b'])).toBe(false);
    expect(check('!has(oldSelf.router) || has(self.router)', { router: 'r' }, { router: 'r' })).toBe(true);
    expect(check('!has(oldSelf.router) || has(self.router)', {}, { router: 'r' })).toBe(false);
    expect(check('!has(oldSelf.router) || has(self.router)', {}, {})).toBe(true);
    expect(compileRule('self == oldSelf')!.transition).toBe(true);
    expect(compileRule('size(self) < 3')!.transition).toBe(false);
  });

  it('covers sizes, arithmetic, comparisons, membership, strings and the conditional operator', () => {
    expect(check('size(self.items) <= 2 && self.items.size() > 0', { items: [1, 2] })).toBe(true);
    expect(check('self.min + 1 < self.max * 2', { min: 3, max: 3 })).toBe(true);
    expect(check("self.mode in ['a', 'b']", { mode: 'c' })).toBe(false);
    expect(check("self.name.startsWith('net-') && self.name.matches('^[a-z-0-9]+$')", { name: 'net-1' })).toBe(true);
    expect(check('has(self.x) ? self.x > 0 : true', {})).toBe(true);
    expect(check('self.replicas % 2 == 1', { replicas: 3 })).toBe(true);
  });

  it('reports a missing field as an evaluation error, except where && or || decide without it', () => {
    expect(() => check('self.absent == 1', {})).toThrow(RuleEvalError);
    expect(check('false && self.absent == 1', {})).toBe(false);
    expect(check('self.absent == 1 || true', {})).toBe(true);
  });

  it('does not compile rules outside the subset (macros, unknown functions, other variables)', () => {
    expect(compileRule('self.all(x, x > 0)')).toBeUndefined();
    expect(compileRule('quantity(self.q).isGreaterThan(quantity("1"))')).toBeUndefined();
    expect(compileRule('request.user == "a"')).toBeUndefined();
  });
});
