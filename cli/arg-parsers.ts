import { InvalidArgumentError } from 'commander';
import { parseViewportArg, resolveViewport, SUPPORTED_VIEWPORTS_TEXT } from '../src/viewport.js';

/** A commander argument parser for counts, sizes and durations: a whole number of at least 1. */
export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a positive whole number');
  return n;
}

export function seconds(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n)) throw new InvalidArgumentError('expected whole seconds');
  return n;
}

/** Whole seconds within [min, max], refused by the CLI (exit 2) rather than sent for the server to refuse. */
export function secondsIn(min: number, max: number): (value: string) => number {
  return (value) => {
    const n = seconds(value);
    if (n < min || n > max) throw new InvalidArgumentError(`expected ${min}..${max} seconds`);
    return n;
  };
}

export function count(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a whole number');
  return n;
}

export function viewport(value: string) {
  const v = parseViewportArg(value);
  if (!v) throw new InvalidArgumentError('expected WIDTHxHEIGHT or WIDTHxHEIGHT@RATE, e.g. 1024x768');
  // The same list the server checks against: a typo is a usage error before anything is sent.
  if (!resolveViewport(v)) throw new InvalidArgumentError(`not a supported viewport; one of ${SUPPORTED_VIEWPORTS_TEXT}`);
  return v;
}

export function tag(value: string, previous: Record<string, string> = {}) {
  const i = value.indexOf('=');
  if (i < 1) throw new InvalidArgumentError('expected KEY=VALUE');
  return { ...previous, [value.slice(0, i)]: value.slice(i + 1) };
}

/** `--header 'Authorization: Bearer x'`, repeatable: the headers so far plus this one. */
export function header(value: string, previous: Record<string, string> = {}) {
  const i = value.indexOf(':');
  if (i < 1) throw new InvalidArgumentError("expected 'Name: value'");
  return { ...previous, [value.slice(0, i).trim()]: value.slice(i + 1).trim() };
}

/** A JSON object given on the command line (`--chrome-policy '{"BookmarkBarEnabled": true}'`). */
export function jsonObject(value: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new InvalidArgumentError('expected a JSON object, e.g. \'{"BookmarkBarEnabled": true}\'');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new InvalidArgumentError('expected a JSON object');
  return parsed as Record<string, unknown>;
}
