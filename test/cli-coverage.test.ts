import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { CommandInfo } from '../cli/operations.js';
import { startTestDaemon, type TestDaemon } from './helpers/daemon.js';

/**
 * Resources other helpers are building in parallel: their operations have no command yet, and
 * their command modules are not checked yet. The lead empties this list once their commands are
 * tagged with covers() (cli/operations.ts); from then on every operation must have a command.
 */
const PENDING_OTHER_HELPERS = {
  commands: [] as string[],
  operations: [] as string[],
};

/** Options that shape the CLI's output or waiting, or where it reads a field from (a file, stdin), rather than the request. */
const CLI_ONLY_OPTIONS = new Set([
  'json',
  'quiet',
  'output',
  'wait',
  'no-open',
  'read-only',
  'no-follow',
  'env-file',
  'password-stdin',
  'values-stdin',
  'token-stdin',
  'payload-file',
  'source-file',
  // rm --all: every active session, which the command lists itself.
  'all',
]);

interface OpenApiOperation {
  operationId: string;
  parameters?: { name: string; in: string }[];
  requestBody?: { content: Record<string, { schema?: JsonSchema }> };
  responses: Record<string, { content?: Record<string, { schema?: JsonSchema }> }>;
}
interface JsonSchema {
  type?: string;
  properties?: Record<string, JsonSchema>;
  anyOf?: JsonSchema[];
}

const pendingCommand = (path: string) => PENDING_OTHER_HELPERS.commands.includes(path.split(' ')[0]!);

describe('every API operation has a CLI command', () => {
  let d: TestDaemon;
  let operations: Map<string, OpenApiOperation>;
  let tree: { operations: Record<string, string[]>; commands: CommandInfo[] };

  before(async () => {
    d = await startTestDaemon();
    const doc = await d.api('GET', '/openapi.json');
    assert.equal(doc.status, 200, doc.text);
    operations = new Map();
    for (const methods of Object.values(doc.body.paths as Record<string, Record<string, OpenApiOperation>>)) {
      for (const op of Object.values(methods)) operations.set(op.operationId, op);
    }
    const r = await d.cli(['__operations']);
    assert.equal(r.exitCode, 0, r.stderr);
    tree = JSON.parse(r.stdout);
  });
  after(async () => {
    await d?.stop();
  });

  test('each operationId of /openapi.json is covered by a command', () => {
    assert.ok(operations.size > 40, `only ${operations.size} operations in /openapi.json`);
    const missing = [...operations.keys()].filter((op) => !tree.operations[op] && !PENDING_OTHER_HELPERS.operations.includes(op));
    assert.deepEqual(missing, [], `operations without a command (tag one with covers() from cli/operations.ts):\n  ${missing.join('\n  ')}`);
    // The commands name real operations, and none of them is also still listed as pending.
    const unknown = Object.keys(tree.operations).filter((op) => !operations.has(op));
    assert.deepEqual(unknown, [], 'covers() names operations that /openapi.json does not have');
  });

  test('the short aliases exist', () => {
    const paths = new Set(tree.commands.filter((c) => !c.group).map((c) => c.path));
    for (const alias of ['create', 'ls', 'rm', 'live', 'watch', 'completion', 'doctor']) assert.ok(paths.has(alias), `no rbrowse ${alias}`);
    assert.deepEqual(tree.operations.createBrowser?.sort(), ['browsers create', 'create']);
    assert.deepEqual(tree.operations.listBrowsers?.sort(), ['browsers list', 'ls']);
    assert.deepEqual(tree.operations.deleteBrowser?.sort(), ['browsers delete', 'rm']);
  });

  test('each command has an example in its --help', () => {
    const without = tree.commands
      .filter((c) => !c.group && c.path !== '__operations' && !pendingCommand(c.path))
      .filter((c) => !/Examples?:\n\s+\S/.test(c.helpAfter))
      .map((c) => c.path);
    assert.deepEqual(without, [], `commands whose --help shows no example (addHelpText('after', '\\nExample:\\n  ...')):\n  ${without.join('\n  ')}`);
  });

  test('an operation answering JSON has a command with --json; a list, one with -q', () => {
    const problems: string[] = [];
    for (const [id, op] of operations) {
      const commands = tree.commands.filter((c) => c.operations.includes(id as never));
      if (!commands.length) continue;
      const schema = op.responses['200']?.content?.['application/json']?.schema;
      if (!schema) continue;
      if (!commands.some((c) => c.options.includes('json'))) problems.push(`${id}: no --json on ${commands.map((c) => c.path).join(', ')}`);
      if (schema.type === 'array' && !commands.some((c) => c.options.includes('quiet'))) {
        problems.push(`${id}: a list, but no -q/--quiet on ${commands.map((c) => c.path).join(', ')}`);
      }
    }
    assert.deepEqual(problems, []);
  });

  test("options are named after the API's fields", () => {
    const problems: string[] = [];
    for (const c of tree.commands) {
      if (!c.operations.length || pendingCommand(c.path)) continue;
      const fields = new Set<string>();
      for (const id of c.operations) {
        const op = operations.get(id)!;
        for (const p of op.parameters ?? []) fields.add(p.name);
        for (const media of Object.values(op.requestBody?.content ?? {})) {
          for (const [name, prop] of Object.entries(media.schema?.properties ?? {})) {
            fields.add(name);
            // Nested fields (viewport.force) may be options of their own.
            for (const nested of [prop, ...(prop.anyOf ?? [])]) for (const sub of Object.keys(nested.properties ?? {})) fields.add(sub);
          }
        }
      }
      for (const option of c.options) {
        const name = option.replace(/^no-/, '').replace(/-/g, '_');
        const named = [name, `${name}s`, `${name}_id`].some((f) => fields.has(f));
        if (!named && !CLI_ONLY_OPTIONS.has(option))
          problems.push(`rbrowse ${c.path} --${option}: not a field of ${c.operations.join(', ')} (${[...fields].join(', ')})`);
      }
    }
    assert.deepEqual(problems, []);
  });
});
