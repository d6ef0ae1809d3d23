import { createHash } from 'node:crypto';

/** Why a change is made, as the API's CauseInput takes it. */
export interface CauseFields {
  actor?: string;
  runUrl?: string;
  commit?: string;
  message?: string;
}

/** What the CI environment says about the pipeline step that runs the CLI. */
export interface CiContext {
  provider: 'github' | 'gitlab' | undefined;
  /**
   * The pipeline step, independent of the attempt: a re-run of the same step yields the same identity, a different
   * step or a different run a different one. Undefined outside a recognised CI.
   */
  stepIdentity: string | undefined;
  /** Actor, run URL and commit from the environment (fields absent when unknown). */
  cause: CauseFields;
}

type Env = Readonly<Record<string, string | undefined>>;

const value = (env: Env, name: string): string | undefined => {
  const v = env[name]?.trim();
  return v ? v : undefined;
};

/**
 * Reads GitHub Actions or GitLab CI variables. GitHub: the run id stays the same across "re-run job" attempts
 * (`GITHUB_RUN_ATTEMPT` is deliberately left out), `GITHUB_JOB` and `GITHUB_ACTION` (the step's id, or `__run_N` by
 * position) name the step. GitLab: a retried job keeps its pipeline id and job name (its `CI_JOB_ID` changes, so it is
 * left out).
 */
export function detectCi(env: Env): CiContext {
  if (value(env, 'GITHUB_ACTIONS') === 'true' && value(env, 'GITHUB_RUN_ID')) {
    const repo = value(env, 'GITHUB_REPOSITORY');
    const runId = value(env, 'GITHUB_RUN_ID')!;
    const server = value(env, 'GITHUB_SERVER_URL') ?? 'https://github.com';
    const cause: CauseFields = {};
    const actor = value(env, 'GITHUB_ACTOR');
    const commit = value(env, 'GITHUB_SHA');
    if (actor) cause.actor = actor;
    if (repo) cause.runUrl = `${server.replace(/\/+$/, '')}/${repo}/actions/runs/${runId}`;
    if (commit) cause.commit = commit;
    const parts = [repo ?? '-', runId, value(env, 'GITHUB_JOB') ?? '-', value(env, 'GITHUB_ACTION') ?? '-'];
    return { provider: 'github', stepIdentity: `github:${parts.join(':')}`, cause };
  }
  if (value(env, 'GITLAB_CI') === 'true' && value(env, 'CI_PIPELINE_ID')) {
    const cause: CauseFields = {};
    const actor = value(env, 'GITLAB_USER_LOGIN');
    const runUrl = value(env, 'CI_PIPELINE_URL');
    const commit = value(env, 'CI_COMMIT_SHA');
    if (actor) cause.actor = actor;
    if (runUrl) cause.runUrl = runUrl;
    if (commit) cause.commit = commit;
    const parts = [value(env, 'CI_PROJECT_PATH') ?? '-', value(env, 'CI_PIPELINE_ID')!, value(env, 'CI_JOB_NAME') ?? '-'];
    return { provider: 'gitlab', stepIdentity: `gitlab:${parts.join(':')}`, cause };
  }
  return { provider: undefined, stepIdentity: undefined, cause: {} };
}

/** The server accepts keys up to 255 characters; longer identities keep a readable head and a hash of the whole. */
const MAX_KEY_LENGTH = 200;

/**
 * The default idempotency key of one request from a CI step: the step identity, the operation and its target, so a
 * retried step returns the rollout it started before while two different bumps in one step do not collide.
 * `target` must be canonical (sorted lists): equal requests must give equal keys. Undefined outside CI.
 */
export function defaultIdempotencyKey(ci: CiContext, operation: string, target: string): string | undefined {
  if (!ci.stepIdentity) return undefined;
  const key = `${ci.stepIdentity}:${operation}:${target}`;
  if (key.length <= MAX_KEY_LENGTH) return key;
  const hash = createHash('sha256').update(key).digest('hex').slice(0, 32);
  return `${key.slice(0, MAX_KEY_LENGTH - hash.length - 1)}~${hash}`;
}
