import { describe, expect, it } from 'vitest';
import type { MeasurementRecord } from '../../src/analysis/model.js';
import type { GraphQLContext } from '../../src/graphql/context.js';
import { wavesResolvers } from '../../src/graphql/resolvers/waves.js';

/**
 * Attack 19, F6 and F11: a run's measurements were read and parsed once per alias (30 aliases of 2,500 measurements
 * held the event loop 2 s), and pages of up to 1,000 were served where the schema (and the query cost estimate) say
 * 500. The resolvers are called as Apollo calls them, with a store that counts its reads.
 */
describe("an analysis run's measurements over GraphQL", () => {
  const measurement = (seq: number) => ({ metricName: 'm', seq, query: 'up', values: [1], verdict: 'SUCCESSFUL' }) as unknown as MeasurementRecord;
  const measurements = wavesResolvers.AnalysisRun!.measurements as unknown as (
    run: { id: string },
    args: { first?: number; after?: number },
    ctx: GraphQLContext,
  ) => Promise<unknown[]>;

  function context() {
    let reads = 0;
    const ctx = {
      analysis: {
        gateRuns: async () => [],
        measurementsOf: async () => {
          reads++;
          return Array.from({ length: 2_500 }, (_, i) => measurement(i + 1));
        },
      },
    } as unknown as GraphQLContext;
    return { ctx, reads: () => reads };
  }

  it('reads them once per request, however many aliases ask', async () => {
    const { ctx, reads } = context();
    const pages = await Promise.all(Array.from({ length: 30 }, (_, i) => measurements({ id: 'run-1' }, { first: 100, after: i * 10 }, ctx)));
    expect(pages.every((page) => page.length === 100)).toBe(true);
    expect(reads()).toBe(1);
    await measurements({ id: 'run-1' }, { first: 1 }, context().ctx);
    expect(reads()).toBe(1);
  });

  it('serves 500 a page at most, as the schema says', async () => {
    const { ctx } = context();
    expect(await measurements({ id: 'run-1' }, { first: 500 }, ctx)).toHaveLength(500);
    await expect(measurements({ id: 'run-1' }, { first: 501 }, ctx)).rejects.toMatchObject({
      code: 'BAD_USER_INPUT',
      message: 'first: must be an integer between 1 and 500 (got 501)',
    });
  });
});
