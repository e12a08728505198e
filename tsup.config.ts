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
});
