import { availableParallelism } from 'node:os';
import { execa, type ResultPromise } from 'execa';

/**
 * A crowded machine: busy loops at normal priority, two per core unless told, each ending by
 * itself after maxSeconds so a test that dies leaves none behind for long.
 */
export function startCpuHog(opts: { perCore?: number; maxSeconds?: number } = {}): { stop(): Promise<void> } {
  const count = (opts.perCore ?? 2) * availableParallelism();
  const ms = (opts.maxSeconds ?? 120) * 1000;
  const loops: ResultPromise[] = [];
  for (let i = 0; i < count; i++) {
    loops.push(execa(process.execPath, ['-e', `const end = Date.now() + ${ms}; while (Date.now() < end) {}`], { reject: false, stdio: 'ignore' }));
  }
  return {
    async stop() {
      for (const loop of loops) loop.kill('SIGKILL');
      await Promise.all(loops);
    },
  };
}
