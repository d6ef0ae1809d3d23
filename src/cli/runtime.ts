import { Option, type Command } from 'commander';
import { isAppError } from '../errors.js';
import { detectCi, type CiContext } from './ciContext.js';
import { ExitCode, exitCodeOf, WaitTimeoutError } from './exitCodes.js';
import { GraphQLClient } from './GraphQLClient.js';
import * as flags from './flags.js';
import { LAST_EVENT_QUERY, ROLLOUT_QUERY, type RolloutView } from './operations.js';
import { coloursAllowed, createProgressReporter } from './progressReporter.js';
import { TargetTracker } from './targetTracker.js';
import { RolloutFollower } from './RolloutFollower.js';
import { websocketSubscriber } from './subscriptionTransport.js';

export const DEFAULT_URL = 'http://127.0.0.1:4000/graphql';

/** The process around the CLI: environment and streams (tests pass their own). */
export interface CliIo {
  env: Readonly<Record<string, string | undefined>>;
  stdout: { write(chunk: string): unknown };
  stderr: { write(chunk: string): unknown; isTTY?: boolean; columns?: number };
}

/** What the client commands read from the environment, in one place. */
export interface CliEnvironment {
  url: string;
  token: string | undefined;
  ci: CiContext;
}

export function readCliEnvironment(env: CliIo['env']): CliEnvironment {
  const token = env.ROLLPLANE_TOKEN?.trim();
  return { url: endpoint(env.ROLLPLANE_URL?.trim() || DEFAULT_URL), token: token || undefined, ci: detectCi(env) };
}

/** A bare server address (`https://rollplane.example.com`) means its /graphql endpoint. */
export function endpoint(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.pathname === '/' || parsed.pathname === '') parsed.pathname = '/graphql';
    return parsed.toString();
  } catch {
    return url;
  }
}

export interface CommonOptions {
  url?: string;
  output: 'text' | 'json';
  retries: number;
}

/** The flags of `addWaitOptions`. */
export interface WaitOptions {
  wait?: boolean;
  /** Seconds. */
  timeout: number;
}

/** Options every client command takes. */
export function addCommonOptions(command: Command): Command {
  return command
    .option('--url <url>', 'GraphQL endpoint (default: $ROLLPLANE_URL or http://127.0.0.1:4000/graphql)', urlFlag)
    .addOption(new Option('-o, --output <format>', 'text, or json: one JSON document on stdout').choices(['text', 'json']).default('text'))
    .option('--retries <n>', 'retries for network errors, 5xx and 429 before giving up (exit 3)', flags.integer(0, 20), 4);
}

/** Options of commands that can follow a rollout to its end. */
export function addWaitOptions(command: Command): Command {
  return command
    .option('--wait', 'follow the rollout until it ends; the exit code tells how it ended')
    .addOption(
      new Option('--timeout <duration>', 'give up waiting after this long (exit 2; the rollout goes on)')
        .argParser(flags.duration(1, 30 * 86_400))
        .default(1800, '30m'),
    );
}

function urlFlag(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new flags.InvalidArgument('Expected an http(s) URL such as http://127.0.0.1:4000/graphql.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new flags.InvalidArgument('Expected an http or https URL.');
  return endpoint(raw);
}

/** One client command's world: output mode, the server, the CI context. */
export class CliContext {
  readonly client: GraphQLClient;
  readonly json: boolean;
  readonly ci: CiContext;

  constructor(
    readonly io: CliIo,
    readonly environment: CliEnvironment,
    readonly options: CommonOptions,
  ) {
    this.json = options.output === 'json';
    this.ci = environment.ci;
    this.client = new GraphQLClient({
      url: options.url ?? environment.url,
      token: environment.token,
      retries: options.retries,
      onRetry: ({ attempt, reason, delayMs }) =>
        io.stderr.write(`rollplane: ${reason}; retrying in ${(delayMs / 1000).toFixed(1)}s (${attempt}/${options.retries})\n`),
    });
  }

  /** The parsed flags of the running command (its own and the common ones). */
  flags<T>(): T {
    return this.options as unknown as T;
  }

  /** The command's result: the JSON document in json mode, else the text. */
  result(document: unknown, text: string): void {
    if (this.json) this.io.stdout.write(`${JSON.stringify(document, null, 2)}\n`);
    else if (text) this.io.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
  }

  info(message: string): void {
    this.io.stderr.write(`${message}\n`);
  }

  /** Follows a rollout to its end with progress on stderr: the rollout's, and each target's as it changes. */
  async follow(id: string, timeoutSeconds: number): Promise<RolloutView> {
    let lastState: string | undefined;
    const isTTY = this.io.stderr.isTTY === true;
    const reporter = createProgressReporter(this.io.stderr, isTTY, undefined, () => this.io.stderr.columns, coloursAllowed(isTTY, this.io.env));
    const targets = new TargetTracker();
    const follower = new RolloutFollower({
      fetchRollout: (rolloutId) => this.client.request(ROLLOUT_QUERY, { id: rolloutId }).then((d) => d.rollout),
      lastEventId: () => this.client.request(LAST_EVENT_QUERY).then((d) => d.serverInfo.lastEventId),
      subscribe: websocketSubscriber(this.client.url, this.client.token),
      onUpdate: (rollout) => {
        if (lastState === undefined && rollout.inFlight) {
          const seeded = targets.seed(rollout.inFlight.edges.map((e) => e.node));
          if (seeded.length > 0) reporter.targets(seeded, targets.inFlightNow(), targets.failures());
        }
        reporter.update(rollout);
        if (rollout.state === 'PAUSED' && lastState !== 'PAUSED') {
          reporter.notice(
            `rollout ${rollout.id} is paused${rollout.message ? ` (${rollout.message})` : ''}; still waiting — continue it with: rollplane rollout resume ${rollout.id}`,
          );
        }
        lastState = rollout.state;
      },
      onEvent: (event) => {
        const change = targets.observe(event);
        if (change) reporter.targets([change], targets.inFlightNow(), targets.failures());
      },
      onNotice: (message) => reporter.notice(message),
    });
    try {
      return await follower.follow(id, timeoutSeconds * 1000);
    } finally {
      reporter.done();
    }
  }
}

/** Exit code for a rollout's final state: 0 succeeded, 1 failed / aborted / rolled back. */
export function exitCodeForState(rollout: RolloutView): ExitCode {
  return rollout.state === 'SUCCEEDED' ? ExitCode.Ok : ExitCode.Failed;
}

/**
 * Wraps a command handler: builds its context, reports an error (text on stderr; in json mode also as the JSON
 * document on stdout) and records the exit code.
 */
export function clientAction<A extends unknown[]>(io: CliIo, setExitCode: (code: number) => void, handler: (ctx: CliContext, ...args: A) => Promise<number>) {
  return async (...args: unknown[]): Promise<void> => {
    const command = args[args.length - 1] as Command;
    const options = command.optsWithGlobals() as CommonOptions;
    const ctx = new CliContext(io, readCliEnvironment(io.env), options);
    try {
      setExitCode(await handler(ctx, ...(args.slice(0, -1) as A)));
    } catch (error) {
      setExitCode(reportError(ctx, error));
    }
  };
}

function reportError(ctx: CliContext, error: unknown): number {
  const code = exitCodeOf(error);
  const message = error instanceof Error ? error.message : String(error);
  const errorCode = isAppError(error) ? (typeof error.details.code === 'string' ? error.details.code : error.code) : 'INTERNAL_ERROR';
  const field = isAppError(error) && typeof error.details.field === 'string' ? error.details.field : undefined;
  ctx.io.stderr.write(`rollplane: ${message}${isAppError(error) ? ` [${errorCode}]` : ''}\n`);
  if (ctx.json) {
    const document: Record<string, unknown> = { error: { code: errorCode, message, ...(field ? { field } : {}) }, exitCode: code };
    if (error instanceof WaitTimeoutError) document.rollout = error.rollout;
    ctx.io.stdout.write(`${JSON.stringify(document, null, 2)}\n`);
  }
  return code;
}
