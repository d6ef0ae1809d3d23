/** The generic controller runtime: work queue, rate limiters, controllers, informers, leader election, durable jobs. */
export { type Clock, sleep, systemClock, type TimerHandle } from './clock.js';
export {
  Controller,
  type ControllerLogger,
  type ControllerOptions,
  type ControllerSnapshot,
  type LastError,
  type Outcome,
  type Reconciler,
  type Result,
  type Source,
} from './Controller.js';
export { describeError, isTerminalError, TerminalError } from './errors.js';
export { FakeClock, flushMicrotasks } from './FakeClock.js';
export { Informer, type InformerEventHandler, type InformerOptions, type Indexers, objectKey } from './Informer.js';
export { type ClaimedJob, type EnqueueOptions, JobQueue, type JobQueueOptions, type JobRecord, type JobState, type JobTransaction } from './JobQueue.js';
export { type JobContext, type JobHandler, JobWorker, type JobWorkerOptions } from './JobWorker.js';
export { LeaderElector, type LeaderElectorOptions, type Runnable, runWhileLeading } from './LeaderElector.js';
export { controllerMetrics, WORKQUEUE_LATENCY_BUCKETS, workQueueMetrics } from './metrics.js';
export {
  BucketRateLimiter,
  type ControllerRateLimiterOptions,
  defaultControllerRateLimiter,
  ItemExponentialFailureRateLimiter,
  MaxOfRateLimiter,
  type RateLimiter,
} from './rateLimiters.js';
export { keyOf, type Request, requestOf } from './request.js';
export { resourceInformer, type ResourceInformerOptions } from './resourceInformer.js';
export {
  enqueueByLabels,
  enqueueOwner,
  enqueueSelf,
  feed,
  type FeedOptions,
  generationChanged,
  type MapFunc,
  metadataChanged,
  type Predicate,
} from './sources.js';
export { TokenBucket } from './TokenBucket.js';
export { WorkQueue, type WorkQueueOptions } from './WorkQueue.js';
