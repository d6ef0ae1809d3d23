/**
 * Prometheus's HTTP API, instant queries only (`POST /api/v1/query`), bounded: a timeout per query, a cap on the bytes
 * read (counted as they arrive, uncompressed: `Accept-Encoding: identity`) and on the series kept. Every way it can go
 * wrong is a PrometheusError with a reason a person can act on — an unreachable server, a slow query, a query
 * Prometheus refused, a matrix or a string where a number was needed, a huge answer — never a crash or a silent pass.
 */

export type PrometheusErrorReason = 'UNREACHABLE' | 'TIMEOUT' | 'HTTP_STATUS' | 'QUERY_REFUSED' | 'BAD_ANSWER' | 'TOO_LARGE' | 'UNSUPPORTED_RESULT';

export class PrometheusError extends Error {
  constructor(
    readonly reason: PrometheusErrorReason,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'PrometheusError';
  }
}

/** A scalar, or a vector's values with their labels (NaN and ±Inf as numbers). */
export type QueryResult = { type: 'scalar'; value: number } | { type: 'vector'; samples: { labels: Record<string, string>; value: number }[] };

export interface PrometheusClientOptions {
  /** Per query; default 30 s. */
  timeoutMs?: number;
  /** Bytes of one answer; default 1 MiB. */
  maxBytes?: number;
  /** Series of one vector; default 1,000. */
  maxSeries?: number;
  fetch?: typeof fetch;
}

function number(text: unknown): number {
  // Prometheus writes values as strings: "0.5", "NaN", "+Inf", "-Inf".
  if (text === 'NaN') return Number.NaN;
  if (text === '+Inf') return Number.POSITIVE_INFINITY;
  if (text === '-Inf') return Number.NEGATIVE_INFINITY;
  const n = typeof text === 'string' ? Number(text) : Number.NaN;
  if (typeof text !== 'string' || text.trim() === '' || Number.isNaN(n))
    throw new PrometheusError('BAD_ANSWER', `a sample value is not a number: ${JSON.stringify(text)}`);
  return n;
}

export class PrometheusClient {
  readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly maxBytes: number;
  private readonly maxSeries: number;
  private readonly fetch: typeof fetch;

  constructor(baseUrl: string, options: PrometheusClientOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.maxBytes = options.maxBytes ?? 1024 * 1024;
    this.maxSeries = options.maxSeries ?? 1000;
    this.fetch = options.fetch ?? fetch;
  }

  /** Evaluates `query` at Prometheus's now. `timeoutMs` may shorten (never lengthen beyond 2 min) the client's. */
  async query(query: string, options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<QueryResult> {
    const timeoutMs = Math.min(options.timeoutMs ?? this.timeoutMs, 120_000);
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
    // Prometheus gives up too, and says so in its answer, a little before we do.
    const body = new URLSearchParams({ query, timeout: `${Math.max(1, Math.floor(timeoutMs * 0.9))}ms` });
    let response: Response;
    try {
      response = await this.fetch(`${this.baseUrl}/api/v1/query`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'accept-encoding': 'identity', accept: 'application/json' },
        body,
        signal,
        redirect: 'error',
      });
    } catch (error) {
      throw this.transportError(error, timeout, timeoutMs);
    }
    let text: string;
    try {
      text = await this.readCapped(response);
    } catch (error) {
      if (error instanceof PrometheusError) throw error;
      throw this.transportError(error, timeout, timeoutMs);
    }
    let parsed: { status?: unknown; errorType?: unknown; error?: unknown; data?: { resultType?: unknown; result?: unknown } };
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new PrometheusError(
        'BAD_ANSWER',
        // Not quoted: an address may name any service rollplane reaches, and viewers read this (attack 19, F2).
        `${this.baseUrl} answered HTTP ${response.status} with something that is not JSON (${response.headers.get('content-type') ?? 'no content type'}, ${text.length} characters): is it a Prometheus server's address?`,
      );
    }
    if (parsed?.status === 'error') {
      const kind = String(parsed.errorType ?? 'error');
      const reason = kind === 'timeout' ? 'TIMEOUT' : 'QUERY_REFUSED';
      // Control characters removed: printed by the CLI, they could redraw its lines (attack 19, F7).
      throw new PrometheusError(
        reason,
        `Prometheus refused the query (${withoutControls(kind)}): ${withoutControls(String(parsed.error ?? '')).slice(0, 500)}`,
      );
    }
    if (!response.ok) throw new PrometheusError('HTTP_STATUS', `${this.baseUrl} answered HTTP ${response.status}`);
    if (parsed?.status !== 'success' || typeof parsed.data !== 'object' || parsed.data === null) {
      throw new PrometheusError('BAD_ANSWER', `${this.baseUrl} did not answer as Prometheus's query API does`);
    }
    return this.resultOf(parsed.data);
  }

  private resultOf(data: { resultType?: unknown; result?: unknown }): QueryResult {
    const { resultType, result } = data;
    if (resultType === 'scalar') {
      if (!Array.isArray(result) || result.length !== 2) throw new PrometheusError('BAD_ANSWER', 'a scalar answer is not [time, value]');
      return { type: 'scalar', value: number(result[1]) };
    }
    if (resultType === 'vector') {
      if (!Array.isArray(result)) throw new PrometheusError('BAD_ANSWER', 'a vector answer is not a list');
      if (result.length > this.maxSeries)
        throw new PrometheusError('TOO_LARGE', `the query returned ${result.length} series, more than ${this.maxSeries}: aggregate it (sum, avg, max by …)`);
      return {
        type: 'vector',
        samples: result.map((sample: { metric?: unknown; value?: unknown }) => {
          if (!Array.isArray(sample?.value) || sample.value.length !== 2) throw new PrometheusError('BAD_ANSWER', 'a sample is not [time, value]');
          const labels = typeof sample.metric === 'object' && sample.metric !== null ? (sample.metric as Record<string, string>) : {};
          return { labels, value: number(sample.value[1]) };
        }),
      };
    }
    throw new PrometheusError(
      'UNSUPPORTED_RESULT',
      `the query returned a ${String(resultType)}; analysis needs an instant vector or a scalar (a range selector like [5m] needs a function such as rate() around it)`,
    );
  }

  private async readCapped(response: Response): Promise<string> {
    const encoding = response.headers.get('content-encoding');
    if (encoding && encoding !== 'identity') {
      await response.body?.cancel();
      throw new PrometheusError('BAD_ANSWER', `${this.baseUrl} answered with Content-Encoding ${encoding} although asked for none`);
    }
    const length = Number(response.headers.get('content-length') ?? Number.NaN);
    if (length > this.maxBytes) {
      await response.body?.cancel();
      throw new PrometheusError('TOO_LARGE', `the answer is ${length} bytes, more than ${this.maxBytes}`);
    }
    if (!response.body) return '';
    const reader = response.body.getReader();
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > this.maxBytes) {
        await reader.cancel();
        throw new PrometheusError('TOO_LARGE', `the answer is more than ${this.maxBytes} bytes: aggregate the query`);
      }
      chunks.push(value);
    }
    return Buffer.concat(chunks).toString('utf8');
  }

  private transportError(error: unknown, timeout: AbortSignal, timeoutMs: number): PrometheusError {
    if (timeout.aborted) return new PrometheusError('TIMEOUT', `no answer from ${this.baseUrl} within ${timeoutMs} ms`, { cause: error });
    const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
    const detail = cause?.code ?? cause?.message ?? (error as Error)?.message ?? String(error);
    return new PrometheusError('UNREACHABLE', `cannot reach Prometheus at ${this.baseUrl}: ${detail}`, { cause: error });
  }
}

/** Text with control characters (terminal escapes, carriage returns) replaced by spaces. */
function withoutControls(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed.
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ');
}
