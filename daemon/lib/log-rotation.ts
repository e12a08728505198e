import { copyFileSync, fstatSync, statSync, truncateSync } from 'node:fs';

/**
 * Keeps the daemon's log (its stderr, the file the CLI opened for it in append mode) under a size:
 * past it, the log is copied to `<log>.1` (the one before goes) and cut to nothing, in place, so
 * every process writing to it (the daemon, its relay and launcher) goes on at its new end. Lines
 * written between the copy and the cut are lost; nothing else is. A daemon in the foreground
 * (stderr a terminal or a pipe) is left alone.
 */
export function rotateLogWhenLarge(file: string, maxBytes: number, log: (msg: string, extra?: object) => void): () => void {
  const check = () => {
    try {
      const out = fstatSync(2);
      const info = statSync(file);
      if (!out.isFile() || out.ino !== info.ino || out.dev !== info.dev || info.size <= maxBytes) return;
      copyFileSync(file, `${file}.1`);
      truncateSync(file, 0);
      log('log rotated', { file, kept: `${file}.1`, bytes: info.size });
    } catch {
      // No log file (the foreground), or a full disk: the next check tries again.
    }
  };
  const timer = setInterval(check, 60_000);
  timer.unref();
  check();
  return () => clearInterval(timer);
}
