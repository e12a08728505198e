import swagger from '@fastify/swagger';
import fp from 'fastify-plugin';
import { VERSION } from '../../../src/version.js';

/**
 * The OpenAPI document of every route registered after it, served as /openapi.json (and checked
 * in as docs/openapi.json).
 */
export const openapiDocument = fp(async (app) => {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'rbrowse',
        version: VERSION,
        description: 'Local, Kernel-compatible remote-browser service',
      },
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
        schemas: {},
      },
      security: [{ bearer: [] }],
    },
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
});
