/** The one error body of kernel-wire.md. */
export interface ErrorDetail {
  code: string;
  message: string;
}
export interface ErrorBody {
  code: string;
  message: string;
  details?: ErrorDetail[];
  inner_error?: ErrorDetail;
}

/** Typed errors thrown anywhere in the daemon; mapped to HTTP in exactly one place (daemon/http/errors.ts). */
export class ApiError extends Error {
  /** Whether a client may send it again (x-should-retry); unset: overload (429) and the machine's conditions (5xx) may. */
  readonly retryable?: boolean;
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: ErrorDetail[],
    readonly inner?: ErrorDetail,
    /** Headers the answer carries besides the body (Retry-After). */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = new.target.name;
  }

  toBody(): ErrorBody {
    return {
      code: this.code,
      message: this.message,
      ...(this.details?.length ? { details: this.details } : {}),
      ...(this.inner ? { inner_error: this.inner } : {}),
    };
  }
}

export class BadRequestError extends ApiError {
  constructor(message: string, details?: ErrorDetail[]) {
    super(400, 'bad_request', message, details);
  }
  /** A single invalid field, named the way the validator names fields. */
  static field(field: string, message: string): BadRequestError {
    return new BadRequestError(`${field}: ${message}`, [{ code: 'invalid_input', message: `${field}: ${message}` }]);
  }
}
export class UnauthorizedError extends ApiError {
  constructor(message = 'missing or invalid API key') {
    super(401, 'unauthorized', message);
  }
}
export class ForbiddenError extends ApiError {
  constructor(message: string) {
    super(403, 'forbidden', message);
  }
}
export class NotFoundError extends ApiError {
  constructor(message: string) {
    super(404, 'not_found', message);
  }
}
export class ConflictError extends ApiError {
  constructor(message: string) {
    super(409, 'conflict', message);
  }
}
/** Overload: the client should come back after `retryAfterSeconds` (sent as Retry-After; the SDK honours it). */
export class RateLimitError extends ApiError {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(429, 'rate_limit_exceeded', message, undefined, undefined, { 'retry-after': String(retryAfterSeconds) });
  }
}
export class ServiceUnavailableError extends ApiError {
  constructor(message: string, inner?: ErrorDetail) {
    super(503, 'service_unavailable', message, undefined, inner);
  }
}
export class InternalError extends ApiError {
  constructor(message: string, inner?: ErrorDetail) {
    super(500, 'internal_error', message, undefined, inner);
  }
}

/** Codes for statuses that reach us from Fastify itself (bad JSON, body too large, ...). */
export const CODE_BY_STATUS: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'unprocessable_entity',
  429: 'rate_limit_exceeded',
  500: 'internal_error',
  502: 'bad_gateway',
  503: 'service_unavailable',
};
