import { defineConfig, type Plugin as TsupPlugin } from 'tsup';
import { builtinModules } from 'node:module';
import type { Plugin } from 'esbuild';

/**
 * Node's own modules are loaded with require(), not import. An ESM import of a built-in makes Node
 * build an ESM facade of it, and building one reads every export, lazy ones included: importing
 * node:http pulls in http2, worker_threads, perf_hooks and Node's internal undici, node:util its
 * argument parser and differ, node:fs readline. In a bare Node, importing node:http, util, fs,
 * child_process, crypto and net costs 11 MiB more resident memory than requiring them. The
 * bundle's require is the banner's createRequire.
 */
const builtinsByRequire: Plugin = {
  name: 'builtins-by-require',
  setup(build) {
    const names = builtinModules.map((name) => name.replace(/[/]/g, '\\/')).join('|');
    build.onResolve({ filter: new RegExp(`^(node:)?(${names})$`) }, (args) =>
      // A dynamic import() stays one: a split chunk exposes a CommonJS module's exports only as
      // its default, so named exports would be lost.
      args.namespace === 'builtin' || args.kind === 'dynamic-import'
        ? { path: args.path, external: true }
        : { path: args.path, namespace: 'builtin' },
    );
    build.onLoad({ filter: /.*/, namespace: 'builtin' }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.path)});`,
      loader: 'js',
    }));
  },
};

/**
 * esbuild's ASCII output escapes strings, templates and regular expressions, but copies some
 * comments as they are (JSDoc in bundled classes: ip-address's "\u00a7" and "\u2013"), and one such
 * character makes V8 hold the whole chunk as two-byte text. In comment lines they become "?" (one
 * UTF-16 unit for one, so source maps stay right); one anywhere else fails the build.
 */
const asciiComments: TsupPlugin = {
  name: 'ascii-comments',
  renderChunk(code) {
    if (!/[^\x00-\x7f]/.test(code)) return;
    const lines = code.split('\n').map((line) => {
      if (!/[^\x00-\x7f]/.test(line)) return line;
      if (!/^\s*(\*|\/\/|\/\*)/.test(line)) throw new Error(`a non-ASCII character outside a comment: ${line.trim().slice(0, 120)}`);
      return line.replace(/[^\x00-\x7f]/g, '?');
    });
    return { code: lines.join('\n') };
  },
};

/**
 * The Playwright Test fixture (`rbrowse/playwright`) runs in the user's own test runner, on the
 * user's Node (18 and up, as Playwright 1.45 does) and loaded by import or, in a CommonJS project,
 * by require: both formats, each whole in one file, with the user's own @playwright/test.
 */
const fixture = defineConfig({
  entry: { playwright: 'src/playwright.ts' },
  external: ['@playwright/test'],
  format: ['esm', 'cjs'],
  platform: 'node',
  target: 'node18',
  outDir: 'dist',
  clean: false,
  splitting: false,
  sourcemap: true,
});

const daemonAndCli = defineConfig({
  // cdp-relay: the process that carries the CDP gateway's connections (daemon/http/gateways/cdp-relay.ts).
  entry: { cli: 'cli/main.ts', daemon: 'daemon/start.ts', 'cdp-relay': 'daemon/http/gateways/cdp-relay-process.ts' },
  format: ['esm'],
  platform: 'node',
  target: 'node24',
  outDir: 'dist',
  // Not cleaned: a rebuild while a daemon or test runs must not pull files from under it.
  clean: false,
  sourcemap: true,
  splitting: true,
  // Bundled, not resolved file by file at start-up: ESM resolution of their hundreds of files cost
  // the CLI more than its own work (typebox ~80 ms of every command). The ESM packages the daemon
  // loads are bundled too, so that their imports of Node's own modules become require()s as well.
  // So is every package an idle daemon loads (Fastify and its plugins, ajv, ws...): 411 CommonJS
  // files, each found, read and wrapped on its own, were 3-4 MiB of its RSS, and the module
  // loader's own hot loops woke V8's optimizing compilers at every start.
  noExternal: [
    'typebox',
    'commander',
    'execa',
    'lowdb',
    'jose',
    'tar',
    'proxy-chain',
    /^fastify/,
    /^@fastify\//,
    'ajv',
    'ajv-formats',
    'fast-json-stringify',
    'ws',
    'yauzl',
    'ignore',
    'nanoid',
    // qs (the deepObject query parser) and the 21 small packages it requires: loaded file by file
    // they were ~5 MiB of an idle daemon's RSS (85 -> 79.5 MiB).
    'qs',
    /^side-channel/,
    /^es-(errors|define-property|object-atoms)$/,
    'object-inspect',
    /^call-bind-apply-helpers$|^call-bound$/,
    'function-bind',
    'get-intrinsic',
    /^(async-function|async-generator-function|generator-function)$/,
    /^(get-proto|dunder-proto|gopd|has-symbols|hasown|math-intrinsics)$/,
  ],
  esbuildPlugins: [builtinsByRequire],
  plugins: [asciiComments],
  // tsup's own rewrite of node: imports would run before builtinsByRequire and make them imports.
  removeNodeProtocol: false,
  esbuildOptions(options) {
    // ASCII output: V8 keeps a module's source in memory for as long as the module lives, and a
    // single character past Latin-1 (a typographic apostrophe in a log line) makes it keep the
    // whole chunk as two-byte characters, double the memory.
    options.charset = 'ascii';
    // A module's source stays in memory as long as the module: without whitespace and with
    // shorter syntax the daemon's chunk is 2.3 MB instead of 3.6 (names are kept, so stack traces
    // still name functions; dist/*.map and NODE_OPTIONS=--enable-source-maps give the lines).
    // Licence comments are left in node_modules, where the packages' licences are.
    options.legalComments = 'none';
    options.minifyWhitespace = true;
    options.minifySyntax = true;
  },
  // A bundled CommonJS module's require() of Node's own modules needs a require in each ESM chunk.
  banner: { js: "import { createRequire as __rbrowseCreateRequire } from 'node:module'; const require = __rbrowseCreateRequire(import.meta.url);" },
});

export default [daemonAndCli, fixture];
