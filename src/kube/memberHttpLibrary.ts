import { type HttpLibrary, IsomorphicFetchHttpLibrary, Observable, type RequestContext, ResponseContext, type ResponseBody } from '@kubernetes/client-node';
import type { ClientRequest } from 'node:http';
import type { BudgetedKubeConfig } from './createKubeClients.js';
import type { NoteRequest } from './resetRetry.js';

/**
 * An answer whose body the request's own timeout cut off: the member answered (its headers came) but not all of it
 * within ROLLPLANE_MEMBER_CLUSTER_TIMEOUT_MS (attack 17, L3: it read "no answer within 2000 ms" and named no setting).
 * Not a close by the member (ERR_STREAM_PREMATURE_CLOSE), which is not the timeout's doing.
 */
export class AnswerCutOffError extends Error {
  override readonly name = 'AnswerCutOffError';
  constructor(options?: { cause?: unknown }) {
    super('the answer was cut off by the request timeout before its end', options);
  }
}

/**
 * client-node's own fetch (IsomorphicFetchHttpLibrary) for a member cluster's typed API calls, with two things of the
 * member request layer: a safe request reset on a reused connection is sent once more (`sendRequest`, resetRetry.ts,
 * ADR 0073), and a body cut off by the request's timeout says so (AnswerCutOffError).
 */
export class MemberHttpLibrary implements HttpLibrary {
  private readonly fetch = new IsomorphicFetchHttpLibrary();

  constructor(private readonly kubeConfig: BudgetedKubeConfig) {}

  send(request: RequestContext): Observable<ResponseContext> {
    const agent = request.getAgent();
    const attempt = (note: NoteRequest) => {
      // The fetch hands the agent its request: an agent of this attempt notes it, and hands it to the connection's own.
      if (agent) request.setAgent(notingAgent(agent, note));
      return this.fetch.send(request).toPromise();
    };
    const answer = this.kubeConfig
      .sendRequest(request.getHttpMethod().toString(), request.getUrl(), attempt)
      .then((response) => withTimeoutNamed(response, request.getSignal()));
    return new Observable(answer);
  }
}

/**
 * `agent` as one request sees it, noting the request it is given: an object whose prototype is the agent (every field
 * and method is the agent's own, live), with its own `addRequest` that calls the agent's. The socket it gets, kept or
 * new, is the agent's.
 */
function notingAgent<A extends object>(agent: A, note: NoteRequest): A {
  const own = Object.create(agent) as A & AddsRequests;
  own.addRequest = (request, options) => {
    note(request);
    (agent as A & AddsRequests).addRequest(request, options);
  };
  return own;
}

/** What node's http client asks of an agent (not in @types/node's Agent). */
interface AddsRequests {
  addRequest(request: ClientRequest, options: unknown): void;
}

/** The answer with its body's reads failing as AnswerCutOffError when the request's timeout (not its stop) ended them. */
function withTimeoutNamed(response: ResponseContext, signal: AbortSignal | undefined): ResponseContext {
  if (!signal) return response;
  const named = <T>(read: Promise<T>): Promise<T> =>
    read.catch((error: unknown) => {
      throw signal.aborted && (signal.reason as { name?: string } | undefined)?.name === 'TimeoutError' ? new AnswerCutOffError({ cause: error }) : error;
    });
  const body: ResponseBody = { text: () => named(response.body.text()), binary: () => named(response.body.binary()) };
  return new ResponseContext(response.httpStatusCode, response.headers, body);
}
