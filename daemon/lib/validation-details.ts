import type { ErrorObject } from 'ajv';
import type { ErrorDetail } from '../../src/errors.js';

/** Names an ajv error by the field it concerns, in the dotted form clients send (viewport.width). */
export function fieldOf(e: ErrorObject): string {
  const base = e.instancePath
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
  const child =
    e.keyword === 'required'
      ? (e.params as { missingProperty: string }).missingProperty
      : e.keyword === 'additionalProperties'
        ? (e.params as { additionalProperty: string }).additionalProperty
        : '';
  return [base, child].filter(Boolean).join('.') || '(root)';
}

function explain(e: ErrorObject): string {
  switch (e.keyword) {
    case 'required':
      return 'is required';
    case 'additionalProperties':
      return 'is not a known field';
    case 'enum':
      return `must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'const':
      return `must be ${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)}`;
    default:
      return e.message ?? 'is invalid';
  }
}

/** Turns validator errors into `invalid_input` details, one per field, most specific first. */
export function validationDetails(errors: ErrorObject[], context?: string): ErrorDetail[] {
  const seen = new Set<string>();
  const details: ErrorDetail[] = [];
  // anyOf wrappers repeat what their branches said; the branch errors name the real problem.
  for (const e of errors.filter((x) => x.keyword !== 'anyOf' || errors.length === 1)) {
    const field = fieldOf(e);
    const message = field === '(root)' ? `${context ?? 'request'} ${explain(e)}` : `${field} ${explain(e)}`;
    if (seen.has(message)) continue;
    seen.add(message);
    details.push({ code: 'invalid_input', message });
  }
  return details;
}
