import type { CanonicalField, DiscoveredField } from '../../src/api/auth-connections.js';
import { BadRequestError } from '../../src/errors.js';

/** A one-time code: typed, never stored. */
export const isOneTimeCode = (f: DiscoveredField): boolean => f.type === 'code' || f.type === 'totp';

/** Names a stored credential may give the identifier under (Kernel's examples use username and email). */
const IDENTIFIER_KEYS = ['username', 'email', 'login', 'identifier', 'user'];

/** The credential value a field is filled from and saved to. */
export function refOf(f: DiscoveredField): string {
  if (f.type === 'password') return 'password';
  if (f.type === 'totp') return 'totp_code';
  if (f.type === 'code') return 'code';
  if (f.type === 'email' || /user|email|login|identifier|account/i.test(`${f.name} ${f.label}`)) return f.type === 'email' ? 'email' : 'username';
  return f.name;
}

/**
 * Kernel's canonical `fields` for the discovered ones: submitted by id (the field's name).
 * `rejected`: the form came back after its values were submitted, so they were turned down.
 */
export function canonicalFields(fields: DiscoveredField[], rejected = false): CanonicalField[] {
  return fields.map((f) => ({
    id: f.name,
    ref: refOf(f),
    reason: rejected ? 'rejected' : 'missing',
    ...(f.hint ? { hint: f.hint } : {}),
    type:
      f.type === 'password'
        ? 'password'
        : f.type === 'totp'
          ? 'totp_code'
          : f.type === 'code'
            ? 'code'
            : ['username', 'email'].includes(refOf(f))
              ? 'identifier'
              : 'text',
    label: f.label,
    observed_selector: f.selector,
    required: f.required ?? false,
  }));
}

/** A value for every field from a stored credential (its TOTP code for a code field), or undefined when one is missing. */
export function valuesFromCredential(fields: DiscoveredField[], stored: { values: Record<string, string>; totpCode?: string }): string[] | undefined {
  const out: string[] = [];
  for (const f of fields) {
    const ref = refOf(f);
    let value: string | undefined = stored.values[f.name] ?? stored.values[ref];
    if (value === undefined && (ref === 'username' || ref === 'email'))
      value = IDENTIFIER_KEYS.map((k) => stored.values[k]).find((v) => v !== undefined);
    if (value === undefined && isOneTimeCode(f)) value = stored.totpCode;
    if (value === undefined) {
      if (f.required || !isOneTimeCode(f)) return undefined;
      continue;
    }
    out.push(value);
  }
  return out;
}

/**
 * The values of a submit (`fields` by name, `field_values` by canonical id: the same keys here)
 * in the order of the form's fields. Every required field needs one; a key the form does not
 * have is a 400, as a typo would otherwise be typed nowhere.
 */
export function valuesFromSubmission(fields: DiscoveredField[], given: Record<string, string>): string[] {
  const names = new Set(fields.map((f) => f.name));
  const unknown = Object.keys(given).filter((k) => !names.has(k));
  if (unknown.length)
    throw BadRequestError.field('fields', `names no field of the login form: ${unknown.join(', ')} (it has ${[...names].join(', ')})`);
  const missing = fields.filter((f) => given[f.name] === undefined && f.required);
  if (missing.length) throw BadRequestError.field('fields', `lacks the required ${missing.map((f) => f.name).join(', ')}`);
  return fields.map((f) => given[f.name] ?? '');
}
