import { describe, expect, it } from 'vitest';
import { parseInput } from '../../../src/domain/kinds/strategy.js';
import {
  bumpClusterVersionInput,
  type ClusterVersionChange,
  virtualClusterContract,
  virtualClusterStrategy,
} from '../../../src/kinds/virtualCluster/contract.js';

const change: ClusterVersionChange = {
  name: 'cv',
  previousSpec: {},
  previousVersion: 'spec-a',
  previousResourceVersion: '1',
  desiredSpec: {},
  desiredVersion: 'spec-b',
};

describe('a ClusterVersion bump with an analysis between its clusters (ADR 0071)', () => {
  const analysis = { every: 2, config: { template: 'checked at launch' } };
  const parse = (input: Record<string, unknown>) =>
    parseInput(bumpClusterVersionInput, { clusterVersion: 'cv', apiServer: { image: 'apiserver:v2' }, ...input });

  it('keeps it in the strategy, which a stored row reads back', () => {
    const strategy = virtualClusterStrategy(parse({ analysis }), change);
    expect(strategy.analysis).toEqual(analysis);
    expect(virtualClusterContract.strategyStored.parse(JSON.parse(JSON.stringify(strategy)))).toEqual(strategy);
    expect(virtualClusterStrategy(parse({}), change)).not.toHaveProperty('analysis');
  });

  it('refuses a malformed one naming input.analysis, the field its contract says refusals name', () => {
    expect(virtualClusterContract.analysisField).toBe('input.analysis');
    expect(() => parse({ analysis: { after: [3, 2], config: {} } })).toThrow(/^input\.analysis\.after: must be in increasing order/);
    expect(() => parse({ analysis: { every: 0, config: {} } })).toThrow(/^input\.analysis\.every: must be at least 1/);
  });
});
