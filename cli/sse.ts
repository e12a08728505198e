import { apiError } from './api-error.js';

/**
 * The JSON events of a server-sent event stream (kernel-wire: `data: <json>` blocks), parsed by
 * the official SDK's decoder; ends when the server ends the stream or `signal` aborts. A refused
 * request throws its ApiCallError. Used by `watch`, and for following logs (deployments, invocations).
 */
export async function* sseEvents<T>(url: string, auth: Record<string, string>, signal: AbortSignal): AsyncGenerator<T> {
  const res = await fetch(url, {
    headers: { accept: 'text/event-stream', ...auth },
    signal,
  });
  if (!res.ok) throw apiError(res.status, await res.text());
  // Loaded here, not at start-up: only the commands that follow a stream pay for the SDK.
  const { Stream } = await import('@onkernel/sdk/core/streaming');
  const controller = new AbortController();
  const abort = () => controller.abort();
  signal.addEventListener('abort', abort, { once: true });
  try {
    yield* Stream.fromSSEResponse<T>(res, controller);
  } finally {
    signal.removeEventListener('abort', abort);
    controller.abort();
  }
}

/**
 * Follows a stream until it ends, `onEvent` answers true, or the user interrupts (Ctrl-C,
 * SIGTERM), which is no error: `rbrowse logs -f`, `fs watch`, `process output`.
 */
// biome-ignore lint/suspicious/noConfusingVoidType: most handlers return nothing; false stops the stream
export async function followUntilInterrupted<T>(url: string, auth: Record<string, string>, onEvent: (event: T) => boolean | void): Promise<void> {
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop).once('SIGTERM', stop);
  try {
    for await (const event of sseEvents<T>(url, auth, controller.signal)) if (onEvent(event)) break;
  } catch (err) {
    if (!controller.signal.aborted) throw err;
  } finally {
    process.off('SIGINT', stop).off('SIGTERM', stop);
    controller.abort();
  }
}
