import multipart from '@fastify/multipart';
import fp from 'fastify-plugin';

/** How bodies are read: uploads streamed, raw bytes as a stream, JSON strictly, no text/plain. */
export const bodyParsers = fp(async (app) => {
  // Uploads stream part by part into the session; the limits bound what one request may carry.
  await app.register(multipart, { limits: { fileSize: 4 * 1024 ** 3, files: 100, fields: 200, parts: 300 } });
  // File bytes reach their handler as the raw stream (routes with `consumes`); elsewhere they fail validation.
  app.addContentTypeParser('application/octet-stream', (_req, payload, done) => done(null, payload));
  // A JSON API: a text/plain body is refused with 415 instead of failing validation as a string.
  app.removeContentTypeParser('text/plain');
  // An empty body with a JSON content type (some clients send it on DELETE) is no body, not an error.
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, text, done) => {
    if (text === '' || text === undefined) return done(null, undefined);
    try {
      done(null, JSON.parse(text as string));
    } catch (err) {
      const e = err as Error & { statusCode?: number };
      e.statusCode = 400;
      done(e, undefined);
    }
  });
});
