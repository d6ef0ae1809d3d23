/**
 * The load generator of `npm run bench -- api`, run as a child process so that the server's process measures only the
 * server: reads one JSON job from argv (url, connections, seconds, requests), runs autocannon for each request in
 * turn and prints one JSON line of results per request on stdout.
 */
import autocannon from 'autocannon';

export interface LoadRequest {
  name: string;
  /** The GraphQL request body. */
  body: string;
  /** Expected HTTP status (200, or 4xx for the refused mix). */
  status: number;
}

export interface LoadJob {
  url: string;
  connections: number;
  seconds: number;
  requests: LoadRequest[];
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

const job = JSON.parse(process.argv[2] ?? '{}') as LoadJob;
for (const request of job.requests) {
  process.stdout.write(`${JSON.stringify(await runOne(job, request))}\n`);
}
