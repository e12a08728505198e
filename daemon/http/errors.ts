import type { ErrorObject } from 'ajv';
import { ApiError, CODE_BY_STATUS, type ErrorBody } from '../../src/errors.js';
import { validationDetails } from '../lib/validation-details.js';

export interface ErrorReply {
  status: number;
  body: ErrorBody;
  /** Deterministic errors tell the SDK not to retry them (x-should-retry: false). */
  retry: boolean;
  headers?: Record<string, string>;
}

interface FastifyishError {
  statusCode?: number;
  code?: string;
  message?: string;
  validation?: ErrorObject[];
  validationContext?: string;
}

/** System errors that say the machine, not the request, is at fault: 503, which clients retry. */
const MACHINE_CONDITIONS: Record<string, string> = {
  ENOSPC: 'no space left on the disk holding RBROWSE_HOME',
  EDQUOT: 'the disk quota of RBROWSE_HOME is exhausted',
  EMFILE: 'the daemon has too many files open; try again shortly',
  ENFILE: 'the machine has too many files open; try again shortly',
  ENOMEM: 'the machine is out of memory; try again shortly',
  EAGAIN: 'the machine cannot start another process now; try again shortly',
};

/** The one place where errors become HTTP statuses and kernel-wire bodies. */
export function toErrorReply(err: unknown): ErrorReply {
  if (err instanceof ApiError) {
    // Overload (429) and the machine's conditions (5xx) pass unless the error says otherwise; a retry would meet anything else again.
    return {
      status: err.status,
      body: err.toBody(),
      retry: err.retryable ?? (err.status >= 500 || err.status === 429),
      ...(err.headers ? { headers: err.headers } : {}),
    };
  }
  const e = (err ?? {}) as FastifyishError;
  const machine = MACHINE_CONDITIONS[e.code ?? ''];
  if (machine)
    return {
      status: 503,
      body: { code: 'service_unavailable', message: machine, inner_error: { code: e.code!, message: `system error ${e.code}` } },
      retry: true,
    };
  if (e.validation) {
    const details = validationDetails(e.validation, e.validationContext);
    const message = `invalid ${e.validationContext ?? 'request'}: ${details.map((d) => d.message).join('; ')}`;
    return { status: 400, body: { code: 'bad_request', message, details }, retry: false };
  }
  const status = e.statusCode && e.statusCode >= 400 && e.statusCode < 500 ? e.statusCode : 500;
  if (status < 500) {
    const message =
      e.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || /JSON/.test(e.message ?? '') ? `malformed JSON body: ${e.message}` : (e.message ?? 'bad request');
    return { status, body: { code: CODE_BY_STATUS[status] ?? 'bad_request', message }, retry: false };
  }
  return { status: 500, body: { code: 'internal_error', message: 'internal error' }, retry: true };
}
