import type { SwaggerTransform } from '@fastify/swagger';
import type { RouteDef } from '../../src/api/route-def.js';

/**
 * The @fastify/swagger transform that documents a multipart route's form (RouteDef.form) in
 * /openapi.json. Only the document gets the body schema: Fastify must not validate one, since the
 * handler reads the parts as they stream.
 */
export function formDoc(route: RouteDef): SwaggerTransform | undefined {
  const { form, consumes } = route;
  if (!form || !consumes) return undefined;
  const fields = form.fields as { properties?: Record<string, unknown>; required?: string[] };
  const body = {
    type: 'object',
    properties: { ...Object.fromEntries(form.files.map((f) => [f, { type: 'string', format: 'binary' }])), ...fields.properties },
    required: [...form.files, ...(fields.required ?? [])],
  };
  return ({ schema, url }) => ({ schema: { ...schema, consumes: [consumes], body }, url });
}
