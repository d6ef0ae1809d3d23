import { KIND_CONTRACTS } from '../../../src/kinds/index.js';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { buildSchema, isInputObjectType, valueFromAST, type GraphQLSchema } from 'graphql';
import { describe, expect, it } from 'vitest';
import { AGENT_POOL_RANGES, bumpAgentImageInput } from '../../../src/kinds/agentPool/contract.js';
import { AGENT_POOL_STRATEGY_DEFAULTS } from '../../../src/kinds/agentPool/limits.js';
import { defaultStrategy, parseStoredStrategy, serializeStrategy, type RolloutStrategy } from '../../../src/domain/kinds/index.js';
import { DEFAULT_MIN_READY_SECONDS, DEFAULT_PEER_RUNTIME_CLASS, NODE_AGENT_RANGES } from '../../../src/kinds/nodeAgent/contract.js';
import { admissionLimit, integerReason, parseInput, rollbackStrategyOf, STRATEGY_DEFAULTS } from '../../../src/domain/kinds/strategy.js';
import { DEFAULT_MAX_CONCURRENT, VIRTUAL_CLUSTER_RANGES } from '../../../src/kinds/virtualCluster/contract.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');

describe('stored strategies', () => {
  it('read rows written before a field existed with the defaults, per kind', () => {
    expect(parseStoredStrategy(KIND_CONTRACTS.AGENT_POOL, '{"maxUnavailable":"25%"}')).toEqual({
      kind: 'AGENT_POOL',
      maxUnavailable: '25%',
      progressDeadlineSeconds: 600,
      failureThreshold: 1,
      autoRollback: false,
    });
    // A virtual-cluster row of the first releases: no autoRollback, no maxUnavailable (the API shows null for it).
    expect(parseStoredStrategy(KIND_CONTRACTS.VIRTUAL_CLUSTER, '{"maxConcurrent":2,"failureThreshold":3,"progressDeadlineSeconds":900}')).toEqual({
      kind: 'VIRTUAL_CLUSTER',
      maxConcurrent: 2,
      failureThreshold: 3,
      progressDeadlineSeconds: 900,
      autoRollback: false,
    });
    expect(parseStoredStrategy(KIND_CONTRACTS.NODE_AGENT, '{"mode":"SURGE","daemonSetNamespace":"ns","daemonSetName":"ds"}')).toMatchObject({
      kind: 'NODE_AGENT',
      mode: 'SURGE',
      minReadySeconds: 0,
      peerRuntimeClass: 'kata-remote',
      canaryNodes: 0,
      daemonSetNamespace: 'ns',
      daemonSetName: 'ds',
      progressDeadlineSeconds: 600,
    });
  });

  it('read a value of the wrong type, or unreadable JSON, as the default instead of stopping the engine', () => {
    expect(parseStoredStrategy(KIND_CONTRACTS.AGENT_POOL, '{"progressDeadlineSeconds":"soon","failureThreshold":-2,"autoRollback":"yes","canary":0}')).toEqual(
      defaultStrategy(KIND_CONTRACTS.AGENT_POOL),
    );
    expect(parseStoredStrategy(KIND_CONTRACTS.NODE_AGENT, '{"mode":"SIDEWAYS","minReadySeconds":-1}')).toEqual(defaultStrategy(KIND_CONTRACTS.NODE_AGENT));
    expect(parseStoredStrategy(KIND_CONTRACTS.VIRTUAL_CLUSTER, 'not json')).toEqual(defaultStrategy(KIND_CONTRACTS.VIRTUAL_CLUSTER));
    expect(parseStoredStrategy(KIND_CONTRACTS.AGENT_POOL, '[1,2]')).toEqual(defaultStrategy(KIND_CONTRACTS.AGENT_POOL));
  });

  it('keep what was planned through a write and a read (kind is the row’s, not stored)', () => {
    const planned: RolloutStrategy[] = [
      parseInput(bumpAgentImageInput, { image: 'a/b:v2', strategy: { maxUnavailable: '3', canary: 2, autoRollback: true } }).strategy,
      {
        ...defaultStrategy(KIND_CONTRACTS.NODE_AGENT),
        maxUnavailable: '1',
        maxConcurrent: 1,
        mode: 'SURGE',
        minReadySeconds: 30,
        canaryNodes: 2,
        daemonSetNamespace: 'ns',
        daemonSetName: 'ds',
      },
      {
        ...defaultStrategy(KIND_CONTRACTS.VIRTUAL_CLUSTER),
        maxConcurrent: 4,
        clusterVersionChange: {
          name: 'cv',
          previousSpec: { a: 1 },
          previousVersion: 'spec-1',
          previousResourceVersion: '7',
          desiredSpec: { a: 2 },
          desiredVersion: 'spec-2',
        },
      },
    ];
    for (const strategy of planned) {
      const json = serializeStrategy(strategy);
      expect(JSON.parse(json)).not.toHaveProperty('kind');
      expect(parseStoredStrategy(KIND_CONTRACTS[strategy.kind], json)).toEqual(strategy);
    }
  });

  it('make a rollback’s strategy from the original: no canary, never rolling itself back', () => {
    const original = { ...defaultStrategy(KIND_CONTRACTS.AGENT_POOL), maxUnavailable: '2', canary: 3, autoRollback: true };
    expect(rollbackStrategyOf(original)).toEqual({
      kind: 'AGENT_POOL',
      maxUnavailable: '2',
      progressDeadlineSeconds: 600,
      failureThreshold: 1,
      autoRollback: false,
      rollback: true,
    });
  });

  it('admit maxConcurrent when present, else maxUnavailable of the changing targets (percent rounded down, at least 1)', () => {
    expect(admissionLimit({ ...defaultStrategy(KIND_CONTRACTS.VIRTUAL_CLUSTER), maxConcurrent: 3 }, 100)).toBe(3);
    expect(admissionLimit({ ...defaultStrategy(KIND_CONTRACTS.AGENT_POOL), maxUnavailable: '25%' }, 10)).toBe(2);
    expect(admissionLimit({ ...defaultStrategy(KIND_CONTRACTS.AGENT_POOL), maxUnavailable: '25%' }, 0)).toBe(1);
    expect(admissionLimit(defaultStrategy(KIND_CONTRACTS.AGENT_POOL), 10)).toBe(1);
  });
});

describe('one integer rule', () => {
  it('says the same words for every kind and field', () => {
    expect(integerReason(0, AGENT_POOL_RANGES.canary)).toBe('must be an integer between 1 and 1000000 (got 0)');
    expect(integerReason(3601, NODE_AGENT_RANGES.minReadySeconds)).toBe('must be an integer between 0 and 3600 (got 3601)');
    expect(integerReason(1.5, VIRTUAL_CLUSTER_RANGES.maxConcurrent)).toBe('must be an integer between 1 and 1000 (got 1.5)');
    expect(integerReason(1000, VIRTUAL_CLUSTER_RANGES.maxConcurrent)).toBeUndefined();
  });

  it('is the only integer validator left in the domain', () => {
    const offenders = sources(path.join(ROOT, 'src')).filter(
      (file) => !file.includes(`${path.sep}kinds${path.sep}`) && /must be an integer (between|from)/.test(readFileSync(file, 'utf8')),
    );
    // Pagination's page size and configuration parsing are not rollout inputs.
    expect(offenders.map((f) => path.relative(ROOT, f)).sort()).toEqual(['src/cli/main.ts', 'src/configParsers.ts', 'src/util/pagination.ts']);
  });
});

/** Every .ts file under `dir`, generated code excluded. */
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return name === 'generated' ? [] : sources(full);
    return name.endsWith('.ts') ? [full] : [];
  });
}

describe('strategy reads', () => {
  it('are typed everywhere: no string-keyed access, no cast to a record, no repeated default', () => {
    const patterns = [/strategy\s*\[/, /strategy\s+as\s+(Record|any|unknown)/, /\(\s*[\w.]*strategy\s*,\s*'\w+'\s*\)/i, /\?\?\s*600\b/];
    const found: string[] = [];
    // The simulator reproduces Kubernetes' own defaults (a Deployment's progressDeadlineSeconds), not rollplane's.
    for (const file of sources(path.join(ROOT, 'src')).filter((f) => !f.includes(`${path.sep}sim${path.sep}`))) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (patterns.some((p) => p.test(line))) found.push(`${path.relative(ROOT, file)}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(found).toEqual([]);
  });

  it('the check sees what it looks for (a broken pattern would pass everything)', () => {
    const patterns = [/strategy\s*\[/, /\?\?\s*600\b/];
    expect(patterns[0]!.test("rollout.strategy['canary']")).toBe(true);
    expect(patterns[1]!.test("num('progressDeadlineSeconds') ?? 600")).toBe(true);
  });
});

describe('the CLI', () => {
  it('reads the contracts’ numbers from limits.ts files only, which load no schema library (a CLI start stays cheap)', () => {
    const imported = sources(path.join(ROOT, 'src/cli')).flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/from '([./]*(?:domain\/kinds|kinds\/\w+)\/\w+\.js)'/g)].map((m) => path.basename(m[1]!)),
    );
    expect(imported.length).toBeGreaterThan(0);
    expect([...new Set(imported)]).toEqual(['limits.js']);
    // The shared limits import nothing; a kind's import only the shared ones.
    expect(readFileSync(path.join(ROOT, 'src/domain/kinds/limits.ts'), 'utf8')).not.toMatch(/^import /m);
    for (const kind of ['agentPool', 'nodeAgent', 'virtualCluster']) {
      const imports = [...readFileSync(path.join(ROOT, 'src/kinds', kind, 'limits.ts'), 'utf8').matchAll(/^import .* from '([^']+)';$/gm)].map((m) => m[1]);
      expect(imports, kind).toEqual(['../../domain/kinds/limits.js']);
    }
  });
});

describe('the defaults', () => {
  const schema: GraphQLSchema = buildSchema(readFileSync(path.join(ROOT, 'schema.graphql'), 'utf8'));
  const defaultOf = (type: string, field: string): unknown => {
    const input = schema.getType(type);
    if (!isInputObjectType(input)) throw new Error(`${type} is not an input type`);
    const f = input.getFields()[field]!;
    return f.astNode?.defaultValue ? valueFromAST(f.astNode.defaultValue, f.type) : undefined;
  };

  it('that schema.graphql documents are the contracts’ (one place decides, the schema says the same)', () => {
    expect({
      maxUnavailable: defaultOf('AgentRolloutStrategyInput', 'maxUnavailable'),
      progressDeadlineSeconds: defaultOf('AgentRolloutStrategyInput', 'progressDeadlineSeconds'),
      failureThreshold: defaultOf('AgentRolloutStrategyInput', 'failureThreshold'),
      autoRollback: defaultOf('AgentRolloutStrategyInput', 'autoRollback'),
    }).toEqual(AGENT_POOL_STRATEGY_DEFAULTS);
    expect({
      mode: defaultOf('BumpNodeAgentImageInput', 'mode'),
      nodeDeadlineSeconds: defaultOf('BumpNodeAgentImageInput', 'nodeDeadlineSeconds'),
      minReadySeconds: defaultOf('BumpNodeAgentImageInput', 'minReadySeconds'),
      failureThreshold: defaultOf('BumpNodeAgentImageInput', 'failureThreshold'),
      peerRuntimeClass: defaultOf('BumpNodeAgentImageInput', 'peerRuntimeClass'),
    }).toEqual({
      // No schema default: the planner reads both off the DaemonSet (its update strategy, its startupProbe).
      mode: undefined,
      nodeDeadlineSeconds: undefined,
      minReadySeconds: DEFAULT_MIN_READY_SECONDS,
      failureThreshold: STRATEGY_DEFAULTS.failureThreshold,
      peerRuntimeClass: DEFAULT_PEER_RUNTIME_CLASS,
    });
    expect({
      maxConcurrent: defaultOf('BumpClusterVersionInput', 'maxConcurrent'),
      failureThreshold: defaultOf('BumpClusterVersionInput', 'failureThreshold'),
      progressDeadlineSeconds: defaultOf('BumpClusterVersionInput', 'progressDeadlineSeconds'),
    }).toEqual({
      maxConcurrent: DEFAULT_MAX_CONCURRENT,
      failureThreshold: STRATEGY_DEFAULTS.failureThreshold,
      progressDeadlineSeconds: STRATEGY_DEFAULTS.progressDeadlineSeconds,
    });
  });

  it('fill in what a caller left out, as the schema would', () => {
    const parsed = parseInput(bumpAgentImageInput, { image: 'a/b:v2' });
    expect(parsed.strategy).toEqual({ kind: 'AGENT_POOL', ...AGENT_POOL_STRATEGY_DEFAULTS });
    expect(parsed.pools).toEqual({});
  });
});
