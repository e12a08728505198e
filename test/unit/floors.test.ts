import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { checkFloors, type FloorTable } from '../../bin/check-floors.js';

const root = join(dirname(new URL(import.meta.url).pathname), '..', '..');
const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A small house: files by path, and its table. */
function house(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'rbrowse-floors-'));
  dirs.push(dir);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, dirname(path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

const table = (folders: Record<string, Record<string, string[]>>): FloorTable => ({
  floors: Object.fromEntries(Object.entries(folders).map(([floor, f]) => [floor, { about: floor, folders: f }])),
});

const base = {
  'daemon/app.ts': "import { serve } from './http/server.js';\nimport { Store } from './lib/store.js';\nexport const app = [serve, Store];\n",
  'daemon/http/server.ts': "import { Store } from '../lib/store.js';\nexport const serve = () => Store;\n",
  'daemon/lib/store.ts': 'export class Store {}\n',
};
const baseTable = {
  root: { daemon: ['edge', 'ground'] },
  edge: { 'daemon/http': ['ground'] },
  ground: { 'daemon/lib': [] },
};

describe('the floors check', () => {
  test('the repository holds to floors.json', () => {
    const report = checkFloors(root, JSON.parse(readFileSync(join(root, 'floors.json'), 'utf8')));
    assert.deepEqual(report.problems, []);
    assert.ok(report.modules > 100, `${report.modules} modules read`);
  });

  test('a house as its table says passes (the control for the attacks below)', () => {
    assert.deepEqual(checkFloors(house(base), table(baseTable)).problems, []);
  });

  test('an import pointing up fails, named with both floors', () => {
    const dir = house({
      ...base,
      'daemon/lib/store.ts': "import type { serve } from '../http/server.js';\nexport class Store { s?: typeof serve }\n",
    });
    const { problems } = checkFloors(dir, table(baseTable));
    assert.ok(
      problems.some(
        (p) =>
          p.includes('daemon/lib/store.ts imports daemon/http/server.ts') && p.includes('(floor ground) may not import daemon/http/ (floor edge)'),
      ),
      problems.join('\n'),
    );
  });

  test('a new folder the table does not name fails, even one that imports only what is allowed elsewhere', () => {
    const dir = house({ ...base, 'daemon/newwing/wing.ts': "import { serve } from '../http/server.js';\nexport const w = serve;\n" });
    const { problems } = checkFloors(dir, table(baseTable));
    assert.ok(problems.includes('daemon/newwing/ holds code but floors.json does not name it'), problems.join('\n'));
  });

  test('stale entries fail: a folder that holds no code, an allowance no import uses, a name that means nothing', () => {
    const dir = house(base);
    const { problems } = checkFloors(
      dir,
      table({ ...baseTable, edge: { 'daemon/http': ['ground', 'root'] }, gone: { 'daemon/gone': [] }, ground: { 'daemon/lib': ['nowhere'] } }),
    );
    assert.ok(problems.includes('floors.json names daemon/gone/, which holds no code (stale entry)'), problems.join('\n'));
    assert.ok(problems.includes('floors.json: daemon/http may import root, but no import of it does (stale entry)'), problems.join('\n'));
    assert.ok(problems.includes('floors.json: daemon/lib may import nowhere, which names no floor, folder or file'), problems.join('\n'));
  });

  test('a cycle of type-only imports fails, as does one through a lazy import()', () => {
    const typeCycle = house({
      ...base,
      'daemon/lib/a.ts': "import type { B } from './b.js';\nexport interface A { b?: B }\n",
      'daemon/lib/b.ts': "import type { A } from './a.js';\nexport interface B { a?: A }\n",
    });
    const typeProblems = checkFloors(typeCycle, table(baseTable)).problems;
    assert.ok(typeProblems.includes('modules import each other in a circle: daemon/lib/a.ts, daemon/lib/b.ts'), typeProblems.join('\n'));
    const lazyCycle = house({
      ...base,
      'daemon/lib/a.ts': "export const a = () => import('./b.js');\n",
      'daemon/lib/b.ts': "export { a } from './a.js';\n",
    });
    const lazyProblems = checkFloors(lazyCycle, table(baseTable)).problems;
    assert.ok(lazyProblems.includes('modules import each other in a circle: daemon/lib/a.ts, daemon/lib/b.ts'), lazyProblems.join('\n'));
  });

  test('an allowance of one file admits that file only', () => {
    const files = {
      ...base,
      'cli/main.ts': "export const run = () => import('../daemon/entry.js');\n",
      'daemon/entry.ts': 'export const start = 1;\n',
    };
    const t = table({ ...baseTable, 'command-line': { cli: ['daemon/entry.ts'] } });
    assert.deepEqual(checkFloors(house(files), t).problems, []);
    const reaching = house({ ...files, 'cli/main.ts': "import { Store } from '../daemon/lib/store.js';\nexport const s = Store;\n" });
    const problems = checkFloors(reaching, t).problems;
    assert.ok(
      problems.some((p) => p.startsWith('cli/main.ts imports daemon/lib/store.ts')),
      problems.join('\n'),
    );
  });
});
