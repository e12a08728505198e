import { text } from 'node:stream/consumers';
import { Command, InvalidArgumentError, type OptionValues } from 'commander';
import type { ProcessExecBody } from '../../src/api/process.js';
import { positiveInt } from '../arg-parsers.js';
import { clientFor } from '../context.js';
import { covers } from '../operations.js';
import { printFields, printJson } from '../output.js';
import { followUntilInterrupted } from '../sse.js';

/** `KEY=VALUE`, repeatable, into one object. */
function envPair(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const i = value.indexOf('=');
  if (i < 1) throw new InvalidArgumentError('expected KEY=VALUE');
  return { ...previous, [value.slice(0, i)]: value.slice(i + 1) };
}

/** The options exec and spawn share, named after the API's fields. */
function processOptions(cmd: Command): Command {
  return cmd
    .argument('<id>', 'session id or name')
    .argument('<command...>', 'the program and its arguments (put them after --)')
    .option('--cwd <path>', 'working directory inside the session (default /home/kernel)')
    .option('--env <KEY=VALUE>', 'an environment variable (repeatable)', envPair)
    .option('--timeout-sec <seconds>', 'kill it after this many seconds (exit code 124)', positiveInt)
    .option('--as-user <user>', "the session's user (kernel or its uid; others are refused)")
    .option('--as-root', 'refused: processes run as the session user');
}

function processBody(argv: string[], o: OptionValues): ProcessExecBody {
  const [command, ...args] = argv;
  return {
    command: command!,
    ...(args.length ? { args } : {}),
    ...(o.cwd ? { cwd: o.cwd } : {}),
    ...(o.env ? { env: o.env } : {}),
    ...(o.timeoutSec ? { timeout_sec: o.timeoutSec } : {}),
    ...(o.asUser ? { as_user: o.asUser } : {}),
    ...(o.asRoot ? { as_root: true } : {}),
  };
}

/** `rbrowse exec` and `rbrowse process exec`: prints the output as the program did and exits with its code. */
export function execCommand(name: string): Command {
  return covers(processOptions(new Command(name)), 'processExec')
    .description('run a command inside a session and wait for it (output and exit code passed through)')
    .option('--json', 'print the API object (output base64) instead')
    .addHelpText('after', '\nExample:\n  rbrowse exec my-session -- ls -la /home/kernel/Downloads')
    .action(async (id: string, argv: string[], o, cmd: Command) => {
      const r = await (await clientFor(cmd)).call('processExec', { params: { id }, body: processBody(argv, o) });
      if (o.json) return printJson(r);
      process.stdout.write(Buffer.from(r.stdout_b64, 'base64'));
      process.stderr.write(Buffer.from(r.stderr_b64, 'base64'));
      process.exitCode = r.exit_code;
    });
}

/** `rbrowse process ...`: background processes inside a session. */
export function processCommand(): Command {
  const cmd = new Command('process').description('processes inside a session: run, feed, watch, signal');
  cmd.addCommand(execCommand('exec'));

  covers(processOptions(cmd.command('spawn')), 'processSpawn')
    .description('start a command in the background; prints its process id')
    .option('--allocate-tty', 'run it on a pseudo-terminal')
    .option('--rows <n>', 'terminal rows (default 24)', positiveInt)
    .option('--cols <n>', 'terminal columns (default 80)', positiveInt)
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse process spawn my-session -- python3 -m http.server 8000')
    .action(async (id: string, argv: string[], o, c: Command) => {
      const body = {
        ...processBody(argv, o),
        ...(o.allocateTty ? { allocate_tty: true } : {}),
        ...(o.rows ? { rows: o.rows } : {}),
        ...(o.cols ? { cols: o.cols } : {}),
      };
      const r = await (await clientFor(c)).call('processSpawn', { params: { id }, body });
      if (o.json) printJson(r);
      else console.log(r.process_id);
    });

  covers(cmd.command('status'), 'processStatus')
    .description("a process's state, exit code, CPU and memory")
    .argument('<id>', 'session id or name')
    .argument('<process_id>', 'the id spawn printed')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse process status my-session 6f1c...')
    .action(async (id: string, processId: string, o, c: Command) => {
      const r = await (await clientFor(c)).call('processStatus', { params: { id, process_id: processId } });
      if (o.json) printJson(r);
      else printFields(Object.entries(r));
    });

  covers(cmd.command('stdin'), 'processStdin')
    .description("write to a process's standard input (the argument, or this command's own input)")
    .argument('<id>', 'session id or name')
    .argument('<process_id>', 'the id spawn printed')
    .argument('[data]', 'text to write (a newline is not added)')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExamples:\n  rbrowse process stdin my-session 6f1c... "yes\\n"\n  echo yes | rbrowse process stdin my-session 6f1c...')
    .action(async (id: string, processId: string, data: string | undefined, o, c: Command) => {
      const bytes = Buffer.from(data === undefined ? await text(process.stdin) : data.replaceAll('\\n', '\n'));
      const r = await (await clientFor(c)).call('processStdin', {
        params: { id, process_id: processId },
        body: { data_b64: bytes.toString('base64') },
      });
      if (o.json) printJson(r);
    });

  covers(cmd.command('kill'), 'processKill')
    .description('send a signal to a process and its children')
    .argument('<id>', 'session id or name')
    .argument('<process_id>', 'the id spawn printed')
    .option('--signal <signal>', 'TERM, KILL, INT or HUP', 'TERM')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse process kill my-session 6f1c... --signal KILL')
    .action(async (id: string, processId: string, o, c: Command) => {
      const r = await (await clientFor(c)).call('processKill', { params: { id, process_id: processId }, body: { signal: o.signal } });
      if (o.json) printJson(r);
    });

  covers(cmd.command('resize'), 'processResize')
    .description("resize a process's pseudo-terminal")
    .argument('<id>', 'session id or name')
    .argument('<process_id>', 'the id spawn printed')
    .requiredOption('--rows <n>', 'rows', positiveInt)
    .requiredOption('--cols <n>', 'columns', positiveInt)
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse process resize my-session 6f1c... --rows 40 --cols 120')
    .action(async (id: string, processId: string, o, c: Command) => {
      const r = await (await clientFor(c)).call('processResize', { params: { id, process_id: processId }, body: { rows: o.rows, cols: o.cols } });
      if (o.json) printJson(r);
    });

  covers(cmd.command('output'), 'processStdoutStream')
    .description("a process's output so far and as it comes, until it exits (then exits with its code)")
    .argument('<id>', 'session id or name')
    .argument('<process_id>', 'the id spawn printed')
    .option('--json', 'print the events as JSON lines')
    .addHelpText('after', '\nExample:\n  rbrowse process output my-session 6f1c...')
    .action(async (id: string, processId: string, o, c: Command) => {
      const client = await clientFor(c);
      const url = new URL(`/browsers/${encodeURIComponent(id)}/process/${encodeURIComponent(processId)}/stdout/stream`, client.baseUrl);
      type Event = { event: string; stream?: 'stdout' | 'stderr'; data_b64?: string; exit_code?: number };
      await followUntilInterrupted<Event>(url.href, client.authHeaders(), (ev) => {
        if (o.json) console.log(JSON.stringify(ev));
        else if (ev.event === 'output') process[ev.stream ?? 'stdout'].write(Buffer.from(ev.data_b64 ?? '', 'base64'));
        if (ev.event !== 'exit') return false;
        process.exitCode = ev.exit_code ?? 1;
        return true;
      });
    });
  return cmd;
}
