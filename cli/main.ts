import { VERSION } from '../src/version.js';

// `rbrowse --version` is asked by scripts and shells all the time: it answers before a single
// command module is loaded. Everything else goes through the full program.
const first = process.argv[2];
if (process.argv.length === 3 && (first === '--version' || first === '-V')) {
  process.stdout.write(`${VERSION}\n`);
} else {
  await import('./program.js');
}
