import { InvalidArgumentError } from 'commander';

/** A commander argument parser for counts, sizes and durations: a whole number of at least 1. */
export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a positive whole number');
  return n;
}
