import { Type } from 'typebox';

// What every area of the contract shares: the error body, path ids, paging, a jwt in the query,
// the names of pools, profiles and extensions. Each area's own schemas and routes live in its module.

export const ErrorDetailSchema = Type.Object({ code: Type.String(), message: Type.String() });
export const ErrorBodySchema = Type.Object(
  {
    code: Type.String({ description: 'Top-level error code, such as bad_request' }),
    message: Type.String(),
    details: Type.Optional(Type.Array(ErrorDetailSchema)),
    inner_error: Type.Optional(ErrorDetailSchema),
    executors: Type.Optional(Type.Array(Type.Unknown(), { description: 'A 409 for one Playwright executor too many: the ones that exist' })),
    invocation_id: Type.Optional(Type.String({ description: 'A WebMCP outcome_unknown: the invocation that started' })),
  },
  { description: 'The error body of every error response' },
);

export const IdParamsSchema = Type.Object({ id: Type.String({ minLength: 1, maxLength: 255 }) });

export const PaginationQuery = {
  offset: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
};

export const JwtQuerySchema = Type.Object({ jwt: Type.Optional(Type.String()) });

export const PoolNameSchema = Type.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9._-]+$' });
