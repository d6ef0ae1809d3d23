import type { ServerResponse } from 'node:http';

/** A JSON error in GraphQL's shape (`errors[].extensions.code`), so every client reads one error format from every route. */
export function sendError(res: ServerResponse, status: number, message: string, code: string): void {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.end(JSON.stringify({ errors: [{ message, extensions: { code } }] }));
}
