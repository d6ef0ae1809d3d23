/**
 * The load generator of `npm run bench -- api`, run as a child process so that the server's process measures only the
 * server: reads one JSON job from argv (url, connections, seconds, requests), runs autocannon for each request in
 * turn and prints one JSON line of results per request on stdout.
 */
import http from 'node:http';
import autocannon from 'autocannon';

export interface LoadRequest {
  name: string;
  /** The GraphQL request body. */
  body: string;
  /** Expected HTTP status (200, or 4xx for the refused mix). */
  status: number;
  /** Another server than the job's (the interleaved rounds of several servers side by side). */
  url?: string;
}

export interface LoadJob {
  url: string;
  connections: number;
  seconds: number;
  requests: LoadRequest[];
  /**
   * Instead of autocannon: this many rounds of one request of each kind in turn, one at a time on one keep-alive
   * connection, timed one by one. Every kind then meets the same machine (a shared machine's load changes from one
   * 8-second window to the next), and the median of a kind is its cost plus the loopback's.
   */
  interleavedRounds?: number;
}

export interface InterleavedResult {
  name: string;
  medianMs: number;
  p90Ms: number;
  unexpected: number;
}

export interface LoadResult {
  name: string;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Responses with another status than expected, and socket errors. */
  unexpected: number;
  total: number;
}

async function runOne(job: LoadJob, request: LoadRequest): Promise<LoadResult> {
  let unexpected = 0;
  const result = await autocannon({
    url: job.url,
    connections: job.connections,
    duration: job.seconds,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: request.body,
    // Counted by hand: autocannon's own non2xx counter would call the refused mix a failure.
    setupClient: (client) => {
      client.on('response', (statusCode: number) => {
        if (statusCode !== request.status) unexpected++;
      });
    },
  });
  return {
    name: request.name,
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    unexpected: unexpected + result.errors + result.timeouts,
    total: result.requests.total,
  };
}

async function runInterleaved(job: LoadJob, rounds: number): Promise<InterleavedResult[]> {
  // One keep-alive connection per server.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const send = (request: LoadRequest) =>
    new Promise<number>((resolve, reject) => {
      const req = http.request(
        request.url ?? job.url,
        { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(request.body) } },
        (res) => {
          res.resume();
          res.once('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.once('error', reject);
      req.end(request.body);
    });
  const times = job.requests.map(() => [] as number[]);
  const unexpected = job.requests.map(() => 0);
  const n = job.requests.length;
  for (let round = 0; round < rounds; round++) {
    // Each round starts one request further on, so that no request always follows the same one (a slow request leaves
    // garbage to collect, and the kind after it paid for it in every round).
    for (let k = 0; k < n; k++) {
      const i = (round + k) % n;
      const request = job.requests[i]!;
      const started = performance.now();
      const status = await send(request);
      // The first rounds warm up the server's caches and the JIT: not counted.
      if (round >= Math.min(20, rounds / 10)) times[i]!.push(performance.now() - started);
      if (status !== request.status) unexpected[i]!++;
    }
  }
  agent.destroy();
  const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0;
  return job.requests.map((request, i) => {
    const sorted = times[i]!.sort((a, b) => a - b);
    return { name: request.name, medianMs: quantile(sorted, 0.5), p90Ms: quantile(sorted, 0.9), unexpected: unexpected[i]! };
  });
}

const job = JSON.parse(process.argv[2] ?? '{}') as LoadJob;
if (job.interleavedRounds) {
  for (const result of await runInterleaved(job, job.interleavedRounds)) process.stdout.write(`${JSON.stringify(result)}\n`);
} else {
  for (const request of job.requests) {
    process.stdout.write(`${JSON.stringify(await runOne(job, request))}\n`);
  }
}
