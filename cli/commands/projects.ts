import { Command, Option } from 'commander';
import type { OrgLimits, Project, ProjectLimits } from '../../src/api/projects.js';
import { clientFor } from '../context.js';
import { covers } from '../operations.js';
import { age, printFields, printJson, printList } from '../output.js';
import { listPages } from '../paging.js';
import { count } from '../arg-parsers.js';
import { deleteEach } from '../delete-each.js';

const show = (o: { json?: boolean }, p: Project) =>
  o.json
    ? printJson(p)
    : printFields([
        ['id', p.id],
        ['name', p.name],
        ['status', p.status],
        ['created_at', p.created_at],
        ['updated_at', p.updated_at],
      ]);

const cap = (n: number | null | undefined) => (n == null ? 'none' : String(n));

function showLimits(o: { json?: boolean }, l: ProjectLimits): void {
  if (o.json) return printJson(l);
  printFields([
    ['max_concurrent_sessions', cap(l.max_concurrent_sessions)],
    ['max_concurrent_invocations', cap(l.max_concurrent_invocations)],
  ]);
}

function showOrgLimits(o: { json?: boolean }, l: OrgLimits): void {
  if (o.json) return printJson(l);
  printFields([
    ['max_concurrent_sessions', String(l.max_concurrent_sessions)],
    ['default_project_max_concurrent_sessions', cap(l.default_project_max_concurrent_sessions)],
  ]);
}

export function projectsCommand(): Command {
  const projects = new Command('projects').description(
    "your organization's projects: each holds its own browsers, pools, profiles, proxies, extensions, apps and keys",
  );
  covers(projects.command('create'), 'createProject')
    .description('create a project')
    .requiredOption('--name <name>', 'its name (1-255 characters)')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse projects create --name staging\n  rbrowse --project staging create --headless')
    .action(async (o, cmd: Command) => show(o, await (await clientFor(cmd)).call('createProject', { body: { name: o.name } })));
  covers(projects.command('list'), 'listProjects')
    .alias('ls')
    .description('list projects (every page, unless --limit or --offset)')
    .option('--name <name>', 'only the project of this name')
    .option('--query <text>', 'projects whose name contains this')
    .option('--limit <n>', 'one page of this size, 1..100', count)
    .option('--offset <n>', 'one page, skipping this many', count)
    .option('--json', 'print the API objects')
    .option('-q, --quiet', 'print project ids only')
    .addHelpText('after', '\nExample:\n  rbrowse projects list')
    .action(async (o, cmd: Command) => {
      const client = await clientFor(cmd);
      const items = await listPages(o, (page) =>
        client.request('listProjects', { query: { ...(o.name ? { name: o.name } : {}), ...(o.query ? { query: o.query } : {}), ...page } }),
      );
      printList(items, o, {
        id: (p) => p.id,
        headers: ['PROJECT', 'NAME', 'STATUS', 'AGE'],
        row: (p) => [p.id, p.name, p.status, age(p.created_at)],
      });
    });
  covers(projects.command('get'), 'getProject')
    .description('show one project')
    .argument('<project>', 'project id or name')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse projects get staging')
    .action(async (id: string, o, cmd: Command) => show(o, await (await clientFor(cmd)).call('getProject', { params: { id } })));
  covers(projects.command('update'), 'updateProject')
    .description('rename, archive or reactivate a project')
    .argument('<project>', 'project id or name')
    .option('--name <name>', 'a new name')
    .addOption(new Option('--status <status>', 'archived refuses every request scoped to it').choices(['active', 'archived']))
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse projects update staging --status archived')
    .action(async (id: string, o, cmd: Command) => {
      const body = { ...(o.name ? { name: o.name } : {}), ...(o.status ? { status: o.status } : {}) };
      show(o, await (await clientFor(cmd)).call('updateProject', { params: { id }, body }));
    });
  covers(projects.command('delete'), 'deleteProject')
    .alias('rm')
    .description('delete empty projects (refused while one holds anything)')
    .argument('<projects...>', 'project ids or names')
    .addHelpText('after', '\nExample:\n  rbrowse projects delete staging')
    .action(async (ids: string[], _o, cmd: Command) => {
      const client = await clientFor(cmd);
      await deleteEach(ids, (id) => client.call('deleteProject', { params: { id } }));
    });
  const limits = projects.command('limits').description("a project's own concurrency caps");
  covers(limits.command('get'), 'getProjectLimits')
    .description("show a project's caps (none: the organization's default applies)")
    .argument('<project>', 'project id or name')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse projects limits get staging')
    .action(async (id: string, o, cmd: Command) => showLimits(o, await (await clientFor(cmd)).call('getProjectLimits', { params: { id } })));
  covers(limits.command('set'), 'updateProjectLimits')
    .description('set caps; 0 removes one')
    .argument('<project>', 'project id or name')
    .option('--max-concurrent-sessions <n>', 'browsers at once: sessions and pool sizes', count)
    .option('--max-concurrent-invocations <n>', 'invocations queued or running at once', count)
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse projects limits set staging --max-concurrent-sessions 5')
    .action(async (id: string, o, cmd: Command) => {
      const body = {
        ...(o.maxConcurrentSessions !== undefined ? { max_concurrent_sessions: o.maxConcurrentSessions } : {}),
        ...(o.maxConcurrentInvocations !== undefined ? { max_concurrent_invocations: o.maxConcurrentInvocations } : {}),
      };
      showLimits(o, await (await clientFor(cmd)).call('updateProjectLimits', { params: { id }, body }));
    });
  return projects;
}

export function limitsCommand(): Command {
  const limits = new Command('limits').description("your organization's concurrency limit and the default cap of its projects");
  covers(limits.command('get'), 'getOrgLimits')
    .description("show the organization's limits")
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse limits get')
    .action(async (o, cmd: Command) => showOrgLimits(o, await (await clientFor(cmd)).call('getOrgLimits', {})));
  covers(limits.command('set'), 'updateOrgLimits')
    .description('set the default cap of projects without their own (0 removes it)')
    .requiredOption('--default-project-max-concurrent-sessions <n>', 'browsers at once per project', count)
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse limits set --default-project-max-concurrent-sessions 10')
    .action(async (o, cmd: Command) =>
      showOrgLimits(
        o,
        await (await clientFor(cmd)).call('updateOrgLimits', {
          body: { default_project_max_concurrent_sessions: o.defaultProjectMaxConcurrentSessions },
        }),
      ),
    );
  covers(limits.command('entitlements'), 'getOrgEntitlements')
    .description('what this daemon offers, as Kernel names plans and features (GET /org/entitlements)')
    .option('--json', 'print the API object')
    .addHelpText('after', '\nExample:\n  rbrowse limits entitlements --json')
    .action(async (o, cmd: Command) => {
      const e = await (await clientFor(cmd)).call('getOrgEntitlements', {});
      if (o.json) return printJson(e);
      printFields([
        [
          'enabled',
          Object.entries(e.features)
            .filter(([, f]) => f.enabled)
            .map(([name]) => name)
            .join(', '),
        ],
        [
          'not offered',
          Object.entries(e.features)
            .filter(([, f]) => !f.enabled)
            .map(([name]) => name)
            .join(', '),
        ],
        ['max_concurrent_browsers', String(e.limits.max_concurrent_browsers)],
      ]);
    });
  return limits;
}
