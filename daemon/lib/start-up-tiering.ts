import { setFlagsFromString } from 'node:v8';

/**
 * Start-up runs once: loading the daemon's modules, building every route's schema and router
 * node, opening the state. With V8's usual thresholds that alone got ~95 functions compiled by
 * Maglev and a few by TurboFan, which brings those compilers' code and memory into an idle
 * daemon's RSS (~6 MiB) for nothing: none of it runs again. So the daemon starts with Maglev's
 * thresholds ten times V8's, and puts V8's own back once it listens, for the code that does run
 * hot (the CDP relay, request handling).
 */
export const STARTUP = { 'invocation-count-for-maglev': 4000, 'invocation-count-for-maglev-osr': 1000 };
/**
 * V8's defaults for them (V8 13, Node 24): V8 does not report a flag's value to JavaScript, so
 * they are written here, and a test holds them to `node --v8-options` of the Node in use.
 */
export const V8_DEFAULTS = { 'invocation-count-for-maglev': 400, 'invocation-count-for-maglev-osr': 100 };

const apply = (flags: Record<string, number>) => {
  for (const [name, value] of Object.entries(flags)) setFlagsFromString(`--${name}=${value}`);
};

export const beginStartUp = () => apply(STARTUP);
export const endStartUp = () => apply(V8_DEFAULTS);
