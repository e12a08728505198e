import { Ajv, type Options, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';

/**
 * A function compiled on its first call rather than when it is defined: compiled code stays in
 * memory for the daemon's life, most routes and forms of a daemon are never used in it, and
 * compiling at start-up alone was enough to wake V8's optimizing compilers (several MiB of an idle
 * daemon's RSS). Ajv's validation errors are carried over for the caller to read.
 */
export function lazily<F extends (data: unknown) => unknown>(compile: () => F): F {
  let compiled: F | undefined;
  const run = ((data: unknown) => {
    compiled ??= compile();
    const result = compiled(data);
    (run as { errors?: unknown }).errors = (compiled as { errors?: unknown }).errors;
    return result;
  }) as F;
  return run;
}

/** One Ajv per set of options, made when the first validator of that set compiles. */
const instances = new Map<string, Ajv>();

function ajvWith(options: Options & { withFormats?: boolean }): Ajv {
  const key = JSON.stringify(options);
  let ajv = instances.get(key);
  if (!ajv) {
    const { withFormats, ...rest } = options;
    ajv = new Ajv({ allErrors: true, strict: false, ...rest });
    if (withFormats) addFormats.default(ajv);
    instances.set(key, ajv);
  }
  return ajv;
}

/** A validator of `schema` (all errors reported, unknown keywords allowed), compiled on its first call. */
export function lazyValidator<T>(schema: object, options: Options & { withFormats?: boolean } = {}): ValidateFunction<T> {
  return lazily(() => ajvWith(options).compile<T>(schema)) as ValidateFunction<T>;
}
