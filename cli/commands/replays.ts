import { writeFile } from 'node:fs/promises';
import { Command } from 'commander';
import { positiveInt } from '../arg-parsers.js';
import { clientFor } from '../context.js';
import { covers } from '../operations.js';
import { age, printJson, printList } from '../output.js';

/** `rbrowse replays ...`: recordings of a session's screen. */
export function replaysCommand(): Command {
  const cmd = new Command('replays').description("recordings of a session's screen (mp4)");
  covers(cmd.command('list'), 'listReplays')
    .alias('ls')
    .description("a session's replays (also once it ended)")
    .argument('<id>', 'session id or name')
    .option('--json', 'print the API objects')
    .option('-q, --quiet', 'print replay ids only')
    .addHelpText('after', '\nExample:\n  rbrowse replays list my-session')
    .action(async (id: string, o, c: Command) => {
      const list = await (await clientFor(c)).call('listReplays', { params: { id } });
      printList(list, o, {
        id: (r) => r.replay_id,
        headers: ['REPLAY', 'STARTED', 'STATE', 'VIEW'],
        row: (r) => [r.replay_id, r.started_at ? `${age(r.started_at)} ago` : '', r.finished_at ? 'finished' : 'recording', r.replay_view_url],
      });
    });
  covers(cmd.command('start'), 'startReplay')
    .description("start recording the session's screen; prints the replay id")
    .argument('<id>', 'session id or name')
    .option('--framerate <fps>', 'frames per second (default 10)', positiveInt)
    .option('--max-duration-in-seconds <s>', 'stop by itself after this long', positiveInt)
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse replays start my-session --framerate 15')
    .action(async (id: string, o, c: Command) => {
      const r = await (await clientFor(c)).call('startReplay', {
        params: { id },
        body: {
          ...(o.framerate ? { framerate: o.framerate } : {}),
          ...(o.maxDurationInSeconds ? { max_duration_in_seconds: o.maxDurationInSeconds } : {}),
        },
      });
      if (o.json) printJson(r);
      else console.log(r.replay_id);
    });
  covers(cmd.command('stop'), 'stopReplay')
    .description('stop a recording (the mp4 is ready when this returns)')
    .argument('<id>', 'session id or name')
    .argument('<replay_id>', 'the id start printed')
    .addHelpText('after', '\nExample:\n  rbrowse replays stop my-session REPLAY')
    .action(async (id: string, replayId: string, _o, c: Command) => {
      await (await clientFor(c)).call('stopReplay', { params: { id, replay_id: replayId } });
    });
  covers(cmd.command('download'), 'downloadReplay')
    .description("save a finished replay's mp4")
    .argument('<id>', 'session id or name')
    .argument('<replay_id>', 'the replay')
    .requiredOption('-o, --output <file>', 'where to write the mp4')
    .addHelpText('after', '\nExample:\n  rbrowse replays download my-session REPLAY -o run.mp4')
    .action(async (id: string, replayId: string, o, c: Command) => {
      const bytes = await (await clientFor(c)).call('downloadReplay', { params: { id, replay_id: replayId } });
      await writeFile(o.output, bytes as Buffer);
    });
  return cmd;
}
