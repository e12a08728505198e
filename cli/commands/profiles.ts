import { Command, InvalidArgumentError, Option } from 'commander';
import type { Profile } from '../../src/api/profiles.js';
import type { RbrowseClient } from '../../src/client.js';
import { clientFor } from '../context.js';
import { saveDownload } from '../download.js';
import { covers } from '../operations.js';
import { age, printFields, printJson, printList } from '../output.js';
import { listPages } from '../paging.js';
import { count } from '../arg-parsers.js';
import { deleteEach } from '../delete-each.js';

function printProfile(p: Profile): void {
  printFields([
    ['id', p.id],
    ['name', p.name],
    ['created_at', p.created_at],
    ['updated_at', p.updated_at],
    ['last_used_at', p.last_used_at],
  ]);
}

const show = (o: { json?: boolean }, p: Profile) => (o.json ? printJson(p) : printProfile(p));

export function profilesCommand(): Command {
  const profiles = new Command('profiles').description('saved browser profiles (user data a session loads and may save back)');
  covers(profiles.command('create'), 'createProfile')
    .description('create an empty profile; a session with --profile NAME:save fills it')
    .option('--name <name>', 'a name unique among your profiles ([A-Za-z0-9._-], up to 255)')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse profiles create --name github-login\n  rbrowse create --profile github-login:save')
    .action(async (o, cmd: Command) => {
      show(o, await (await clientFor(cmd)).call('createProfile', { body: o.name ? { name: o.name } : {} }));
    });
  covers(profiles.command('list'), 'listProfiles')
    .alias('ls')
    .description('list profiles (every page, unless --limit or --offset)')
    .option('--name <name>', 'only the profile of this name')
    .option('--query <text>', 'profiles whose name or id contains this')
    .option('--limit <n>', 'one page of this size, 1..100', count)
    .option('--offset <n>', 'one page, skipping this many', count)
    .option('--json', 'print the API objects')
    .option('-q, --quiet', 'print profile ids only')
    .addHelpText('after', '\nExample:\n  rbrowse profiles list --query login')
    .action(async (o, cmd: Command) => {
      const client = await clientFor(cmd);
      const items = await listPages(o, (page) =>
        client.request('listProfiles', { query: { ...(o.name ? { name: o.name } : {}), ...(o.query ? { query: o.query } : {}), ...page } }),
      );
      printList(items, o, {
        id: (p) => p.id,
        headers: ['PROFILE', 'NAME', 'AGE', 'UPDATED', 'LAST USED'],
        row: (p) => [p.id, p.name ?? '', age(p.created_at), p.updated_at ?? '', p.last_used_at ?? ''],
      });
    });
  covers(profiles.command('get'), 'getProfile')
    .description('show one profile')
    .argument('<profile>', 'profile id or name')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse profiles get github-login --json')
    .action(async (profile: string, o, cmd: Command) => show(o, await (await clientFor(cmd)).call('getProfile', { params: { id: profile } })));
  covers(profiles.command('update'), 'updateProfile')
    .alias('rename')
    .description('rename a profile')
    .argument('<profile>', 'profile id or name')
    .requiredOption('--name <name>', 'the new name')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse profiles update github-login --name github-work')
    .action(async (profile: string, o, cmd: Command) =>
      show(o, await (await clientFor(cmd)).call('updateProfile', { params: { id: profile }, body: { name: o.name } })),
    );
  covers(profiles.command('delete'), 'deleteProfile')
    .alias('rm')
    .description('delete profiles and their saved data (refused while a live session uses one)')
    .argument('<profiles...>', 'profile ids or names')
    .addHelpText('after', '\nExample:\n  rbrowse profiles delete github-login')
    .action(async (ids: string[], _o, cmd: Command) => {
      const client = await clientFor(cmd);
      await deleteEach(ids, (id) => client.call('deleteProfile', { params: { id } }));
    });
  covers(profiles.command('download'), 'downloadProfile')
    .description("save a profile's user data as a tar archive")
    .argument('<profile>', 'profile id or name')
    .option('-o, --output <file>', 'where to write it ("-": standard output; default NAME.tar)')
    .addOption(new Option('--format <format>', 'archive format').choices(['tar', 'tar.zst']).default('tar'))
    .addHelpText(
      'after',
      '\nExit status 3 when nothing has been saved to the profile yet.\n\nExample:\n  rbrowse profiles download github-login -o - | tar t',
    )
    .action(async (profile: string, o, cmd: Command) => {
      const res = await (await clientFor(cmd)).open('downloadProfile', { params: { id: profile }, query: { format: o.format } });
      if (res.status === 202) {
        await res.body?.cancel();
        process.stderr.write(`profile ${profile} has no saved data yet\n`);
        process.exitCode = 3;
        return;
      }
      await saveDownload(`downloading profile ${profile}`, res, o.output ?? `${profile}.${o.format}`);
    });
  return profiles;
}

/** `--profile NAME[:save]` of `rbrowse create`: a profile id or name, `:save` to write changes back. */
export function profileArg(value: string): { ref: string; save: boolean } {
  const save = value.endsWith(':save');
  const ref = save ? value.slice(0, -':save'.length) : value;
  if (!ref) throw new InvalidArgumentError('expected NAME or NAME:save');
  return { ref, save };
}

/** The create body's `profile`: the id or name is looked up first, so either works. */
export async function profileSelection(client: RbrowseClient, arg: { ref: string; save: boolean }) {
  const { id } = await client.call('getProfile', { params: { id: arg.ref } });
  return { id, save_changes: arg.save };
}
