import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';

export interface Exchange {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export type ExchangeBody = string | Buffer | Readable | FormData | undefined;

/**
 * Whether `value` is a FormData, told by its tag: naming the FormData global (`instanceof`) loads
 * Node's bundled fetch (undici), about 20 ms of a short command's start-up, even for a JSON body.
 */
export const isFormData = (value: unknown): value is FormData => Object.prototype.toString.call(value) === '[object FormData]';

/**
 * One HTTP request with Node's own http client, its whole answer read. The CLI's calls go through
 * here rather than fetch or the undici package: both cost a short command 25-30 ms just to load,
 * node:http about 3 ms. Idle keep-alive sockets are unreferenced by Node's agent, so they never
 * hold a finished command open. A FormData body is encoded by the fetch standard's Response (with
 * its boundary), paid only by uploads; a stream body is sent as it is read, and its failure (a
 * local file missing) fails the request.
 */
export async function exchange(
  url: URL,
  o: { method: string; headers: Record<string, string>; body?: ExchangeBody; timeoutMs?: number },
): Promise<Exchange> {
  // node:http is required by the build (no ESM facade); https, which loads TLS, only when asked.
  const request = url.protocol === 'https:' ? (await import('node:https')).request : httpRequest;
  let body = o.body;
  const headers = { ...o.headers };
  if (isFormData(body)) {
    const encoded = new Response(body);
    headers['content-type'] = encoded.headers.get('content-type')!;
    body = Readable.fromWeb(encoded.body! as WebReadableStream);
  }
  const payload = body;
  // A whole body says its length: Node's client would send a DELETE's body with neither a length
  // nor chunked encoding, which the server refuses as malformed.
  if (typeof payload === 'string' || Buffer.isBuffer(payload)) headers['content-length'] = String(Buffer.byteLength(payload));
  return new Promise((resolve, reject) => {
    const req = request(url, { method: o.method, headers, ...(o.timeoutMs ? { timeout: o.timeoutMs } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    // Only a caller's own bound: Node's global agent sets a 5 s idle timeout on every socket, and
    // a listener here would turn it into a failure of any call the daemon takes longer to answer
    // (an exec, a queued create); without one the request just waits.
    if (o.timeoutMs) req.on('timeout', () => req.destroy(new Error(`no answer from ${url.origin} within ${o.timeoutMs} ms`)));
    if (payload instanceof Readable) {
      payload.once('error', (err) => req.destroy(err));
      payload.pipe(req);
    } else req.end(payload);
  });
}
