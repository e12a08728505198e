import { runDaemonFromArgv } from './entry.js';

await runDaemonFromArgv(process.argv);
