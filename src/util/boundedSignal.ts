/**
 * A signal that aborts after `ms` or when `stop` aborts. Not `AbortSignal.any([AbortSignal.timeout(ms), stop])`: Node
 * holds a timeout signal weakly once combined, and a garbage collection before it fires loses it, so under load (many
 * member clusters, a busy heap) requests to a black-holed member were never aborted and it stayed CONNECTING (attack 13, F5),
 * and an endless answer was read for as long as it lasted (F2). The timer holds the controller until it fires; the
 * listener on `stop` is removed then, so a connection's requests do not pile listeners on it.
 */
export function boundedSignal(ms: number, stop: AbortSignal): AbortSignal {
  const controller = new AbortController();
  if (stop.aborted) {
    controller.abort(stop.reason);
    return controller.signal;
  }
  const onStop = () => {
    clearTimeout(timer);
    controller.abort(stop.reason);
  };
  const timer = setTimeout(() => {
    stop.removeEventListener('abort', onStop);
    controller.abort(new DOMException(`no answer within ${ms} ms`, 'TimeoutError'));
  }, ms);
  timer.unref();
  stop.addEventListener('abort', onStop, { once: true });
  return controller.signal;
}

/** boundedSignal for a request that nothing stops but its timeout (`local`'s connection lives as long as the process). */
export function timeoutSignal(ms: number): AbortSignal {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException(`no answer within ${ms} ms`, 'TimeoutError')), ms);
  timer.unref();
  return controller.signal;
}
