import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { cli: 'cli/main.ts', daemon: 'daemon/entry.ts' },
  format: ['esm'],
  platform: 'node',
  target: 'node24',
  outDir: 'dist',
  clean: true,
  sourcemap: true,
  splitting: true,
});
