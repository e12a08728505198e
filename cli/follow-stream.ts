import { followEvents, type Progress, type ProgressOptions } from './progress.js';
import { sseEvents } from './sse.js';

/**
 * Follows a resource's event stream (a deployment's build, an invocation) with followEvents.
 * When the stream ends before an end state (the daemon stopped), `current` is asked for the
 * event that stands for the resource as it is now, so a finished one still reports its end.
 */
export async function followStream<E, T>(
  label: string,
  stream: { url: URL; auth: Record<string, string>; current: () => Promise<E> },
  onEvent: (event: E, p: Progress) => T | undefined,
  opts: ProgressOptions<T> = {},
): Promise<T> {
  const controller = new AbortController();
  async function* events(): AsyncGenerator<E> {
    yield* sseEvents<E>(stream.url.href, stream.auth, controller.signal);
    yield await stream.current();
  }
  try {
    return await followEvents(label, events(), onEvent, opts);
  } finally {
    controller.abort();
  }
}
