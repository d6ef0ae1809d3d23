import type { Command } from 'commander';
import * as flags from '../flags.js';

/** Flags that say why a change is made, and the idempotency key; they override what the CI environment gives. */
export function addCauseOptions(command: Command): Command {
  return command
    .option('--actor <name>', 'who asks for the change (default: GITHUB_ACTOR / GITLAB_USER_LOGIN)', flags.text(256))
    .option('--run-url <url>', 'link to the CI run (default: built from the GitHub or GitLab environment)', flags.text(2048))
    .option('--commit <sha>', 'the commit the change comes from (default: GITHUB_SHA / CI_COMMIT_SHA)', flags.text(256))
    .option('--message <text>', 'free text recorded with the rollout', flags.text(1024))
    .option('--idempotency-key <key>', 'retrying with the same key returns the same rollout (default: derived from the CI run, job and step)', flags.text(255))
    .option('--no-idempotency-key', 'send no idempotency key, even in CI');
}
