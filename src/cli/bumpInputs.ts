import { ValidationError } from '../errors.js';
import type {
  AgentRolloutStrategyInput,
  BumpAgentImageInput,
  BumpClusterVersionInput,
  BumpNodeAgentImageInput,
  CauseInput,
  ComponentChangeInput,
  PoolSelectorInput,
} from './generated/graphql.js';
import { defaultIdempotencyKey, type CauseFields, type CiContext } from './ciContext.js';

/**
 * Command-line options → the schema's bump inputs. Only what the user gave is sent, so the server's documented
 * defaults apply to the rest. Each builder also returns the canonical target used in the default idempotency key.
 */

export interface CauseOptions {
  actor?: string;
  runUrl?: string;
  commit?: string;
  message?: string;
  /** A key, or false for `--no-idempotency-key`. */
  idempotencyKey?: string | false;
}

export interface AgentImageOptions extends CauseOptions {
  namespace?: string[];
  pool?: string[];
  selector?: string;
  maxUnavailable?: string;
  canary?: number;
  progressDeadline?: number;
  failureThreshold?: number;
  autoRollback?: boolean;
  allowDowngrade?: boolean;
  supersede?: boolean;
  dryRun?: boolean;
}

export interface NodeAgentImageOptions extends CauseOptions {
  mode?: 'NODE_BY_NODE' | 'SURGE';
  canaryNodeSelector?: string;
  nodeDeadline?: number;
  minReady?: number;
  failureThreshold?: number;
  peerRuntimeClass?: string;
  dryRun?: boolean;
}

export interface ClusterVersionOptions extends CauseOptions {
  apiserverImage?: string;
  apiserverArg?: string[];
  apiserverEnv?: { name: string; value: string | null }[];
  controllerManagerImage?: string;
  controllerManagerArg?: string[];
  controllerManagerEnv?: { name: string; value: string | null }[];
  specPatch?: unknown;
  cluster?: string[];
  maxConcurrent?: number;
  failureThreshold?: number;
  progressDeadline?: number;
  dryRun?: boolean;
}

/** A mutation input (typed by the generated schema types) and what it targets. */
export interface BuiltInput<TInput> {
  input: TInput;
  /** Canonical description of what the request targets (part of the default idempotency key). */
  target: string;
}

const sorted = (values: readonly string[] | undefined) => [...new Set(values ?? [])].sort();

/** Environment cause, overridden field by field by the flags; undefined when empty. */
export function causeFrom(ci: CiContext, options: CauseOptions): CauseFields | undefined {
  const cause: CauseFields = { ...ci.cause };
  if (options.actor !== undefined) cause.actor = options.actor;
  if (options.runUrl !== undefined) cause.runUrl = options.runUrl;
  if (options.commit !== undefined) cause.commit = options.commit;
  if (options.message !== undefined) cause.message = options.message;
  return Object.keys(cause).length ? cause : undefined;
}

/**
 * The key to send: `--idempotency-key` as given; none with `--no-idempotency-key`; otherwise derived from the CI step
 * (none outside CI). Dry runs get no derived key: a preview must not claim the key of the real run that follows.
 */
export function idempotencyKeyFor(ci: CiContext, options: CauseOptions, operation: string, target: string, dryRun: boolean): string | undefined {
  if (options.idempotencyKey === false) return undefined;
  if (typeof options.idempotencyKey === 'string') return options.idempotencyKey;
  return dryRun ? undefined : defaultIdempotencyKey(ci, operation, target);
}

/** The fields every bump input has. */
interface CommonInput {
  cause?: CauseInput | null;
  idempotencyKey?: string | null;
  dryRun?: boolean | null;
}

function withCommon<TInput extends CommonInput>(
  input: TInput,
  ci: CiContext,
  options: CauseOptions,
  operation: string,
  target: string,
  dryRun: boolean,
): BuiltInput<TInput> {
  const cause = causeFrom(ci, options);
  const key = idempotencyKeyFor(ci, options, operation, target, dryRun);
  return {
    input: { ...input, ...(cause ? { cause } : {}), ...(key ? { idempotencyKey: key } : {}), ...(dryRun ? { dryRun: true } : {}) },
    target,
  };
}

export function agentImageInput(image: string, options: AgentImageOptions, ci: CiContext): BuiltInput<BumpAgentImageInput> {
  const namespaces = sorted(options.namespace);
  const names = sorted(options.pool);
  const pools: PoolSelectorInput = {};
  if (namespaces.length) pools.namespaces = namespaces;
  if (names.length) pools.names = names;
  if (options.selector !== undefined) pools.labelSelector = options.selector;

  const strategy: AgentRolloutStrategyInput = {};
  if (options.maxUnavailable !== undefined) strategy.maxUnavailable = options.maxUnavailable;
  if (options.canary !== undefined) strategy.canary = options.canary;
  if (options.progressDeadline !== undefined) strategy.progressDeadlineSeconds = options.progressDeadline;
  if (options.failureThreshold !== undefined) strategy.failureThreshold = options.failureThreshold;
  if (options.autoRollback !== undefined) strategy.autoRollback = options.autoRollback;

  const input: BumpAgentImageInput = { image };
  if (Object.keys(pools).length) input.pools = pools;
  if (Object.keys(strategy).length) input.strategy = strategy;
  if (options.allowDowngrade) input.allowDowngrade = true;
  if (options.supersede) input.supersede = true;

  const target = Object.keys(pools).length
    ? [
        namespaces.length ? `ns=${namespaces.join(',')}` : '',
        names.length ? `pools=${names.join(',')}` : '',
        options.selector !== undefined ? `selector=${options.selector}` : '',
      ]
        .filter(Boolean)
        .join(';')
    : 'all-pools';
  return withCommon(input, ci, options, 'bump-agent-image', target, options.dryRun === true);
}

export function nodeAgentImageInput(namespacedName: string, image: string, options: NodeAgentImageOptions, ci: CiContext): BuiltInput<BumpNodeAgentImageInput> {
  const [namespace, name] = namespacedName.split('/') as [string, string];
  const input: BumpNodeAgentImageInput = { namespace, name, image };
  if (options.mode !== undefined) input.mode = options.mode;
  if (options.canaryNodeSelector !== undefined) input.canaryNodeSelector = options.canaryNodeSelector;
  if (options.nodeDeadline !== undefined) input.nodeDeadlineSeconds = options.nodeDeadline;
  if (options.minReady !== undefined) input.minReadySeconds = options.minReady;
  if (options.failureThreshold !== undefined) input.failureThreshold = options.failureThreshold;
  if (options.peerRuntimeClass !== undefined) input.peerRuntimeClass = options.peerRuntimeClass;
  return withCommon(input, ci, options, 'bump-node-agent-image', `${namespace}/${name}`, options.dryRun === true);
}

function component(image: string | undefined, args: string[] | undefined, env: { name: string; value: string | null }[] | undefined) {
  const change: ComponentChangeInput = {};
  if (image !== undefined) change.image = image;
  if (args?.length) change.args = args;
  if (env?.length) change.env = env;
  return Object.keys(change).length ? change : undefined;
}

export function clusterVersionInput(clusterVersion: string, options: ClusterVersionOptions, ci: CiContext): BuiltInput<BumpClusterVersionInput> {
  const apiServer = component(options.apiserverImage, options.apiserverArg, options.apiserverEnv);
  const controllerManager = component(options.controllerManagerImage, options.controllerManagerArg, options.controllerManagerEnv);
  if (options.specPatch !== undefined && (typeof options.specPatch !== 'object' || options.specPatch === null || Array.isArray(options.specPatch))) {
    throw new ValidationError('--spec-patch', 'must be a JSON object (a merge patch of the ClusterVersion spec)');
  }
  if (!apiServer && !controllerManager && options.specPatch === undefined) {
    throw new ValidationError(
      'cluster-version',
      'nothing to change: give --apiserver-image/--apiserver-arg/--apiserver-env, the --controller-manager-… equivalents, or --spec-patch',
    );
  }
  const clusters = sorted(options.cluster);
  const input: BumpClusterVersionInput = { clusterVersion };
  if (apiServer) input.apiServer = apiServer;
  if (controllerManager) input.controllerManager = controllerManager;
  if (options.specPatch !== undefined) input.specPatch = options.specPatch;
  if (clusters.length) input.clusters = clusters;
  if (options.maxConcurrent !== undefined) input.maxConcurrent = options.maxConcurrent;
  if (options.failureThreshold !== undefined) input.failureThreshold = options.failureThreshold;
  if (options.progressDeadline !== undefined) input.progressDeadlineSeconds = options.progressDeadline;
  const target = clusters.length ? `${clusterVersion};clusters=${clusters.join(',')}` : clusterVersion;
  return withCommon(input, ci, options, 'bump-cluster-version', target, options.dryRun === true);
}
