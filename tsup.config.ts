import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { cli: 'cli/main.ts', daemon: 'daemon/entry.ts' },
  format: ['esm'],
  platform: 'node',
  target: 'node24',
  outDir: 'dist',
  // Not cleaned: a rebuild while a daemon or test runs must not pull files from under it.
  clean: false,
  sourcemap: true,
  splitting: true,
  // Bundled, not resolved file by file at start-up: ESM resolution of their hundreds of files cost
  // the CLI more than its own work (typebox ~80 ms, undici ~60 ms of every command).
  noExternal: ['typebox', 'undici', 'commander'],
  // undici is CommonJS: its require() of Node's own modules needs a require in each ESM chunk.
  banner: { js: "import { createRequire as __rbrowseCreateRequire } from 'node:module'; const require = __rbrowseCreateRequire(import.meta.url);" },
});
