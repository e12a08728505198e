/**
 * The floors check (`npm run lint`): every import of daemon/, src/ and cli/ against the table in
 * floors.json, in the spirit of Playwright's DEPS.list. It fails on an import the table does not
 * allow, on a folder of code the table does not name, on a table entry no longer true (a folder
 * gone, an allowance no import uses) and on modules that import each other in a circle, type-only
 * imports and lazy import()s included.
 *
 * Imports are read with oxc's parser, which keeps type-only imports (TypeScript's own emit drops
 * them, and a cycle of types is still a cycle to a reader).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseSync } from 'oxc-parser';

/** floors.json: each floor's folders, each folder with what it may import (floors, folders or files). */
export interface FloorTable {
  floors: Record<string, { about: string; folders: Record<string, string[]> }>;
}

export interface FloorReport {
  problems: string[];
  modules: number;
}

const CODE = /\.(ts|tsx|mts|cts|js|mjs|cjs)$/;

function sourceFiles(root: string, tops: string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(join(root, dir)).sort()) {
      if (name === 'node_modules' || name === 'dist') continue;
      const path = join(dir, name);
      if (statSync(join(root, path)).isDirectory()) walk(path);
      else if (CODE.test(name) && !name.endsWith('.d.ts')) out.push(path);
    }
  };
  for (const top of tops) if (existsSync(join(root, top))) walk(top);
  return out;
}

/** The module an import names, as NodeNext resolves it: `./x.js` is `./x.ts` in the source. */
function resolveImport(root: string, from: string, request: string): string | undefined {
  const target = relative(root, resolve(root, dirname(from), request));
  const candidates = [
    target,
    target.replace(/\.js$/, '.ts'),
    target.replace(/\.js$/, '.tsx'),
    target.replace(/\.mjs$/, '.mts'),
    `${target}.ts`,
    join(target, 'index.ts'),
  ];
  return candidates.find((c) => existsSync(join(root, c)) && statSync(join(root, c)).isFile());
}

/** Every relative import of a module: static, re-exported, type-only and lazy. */
function importsOf(root: string, file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  const { module, errors } = parseSync(file, text);
  if (errors.length) throw new Error(`${file}: ${errors[0]!.message}`);
  const requests = [
    ...module.staticImports.map((i) => i.moduleRequest.value),
    ...module.staticExports.flatMap((e) => e.entries.flatMap((x) => (x.moduleRequest ? [x.moduleRequest.value] : []))),
    ...module.dynamicImports
      .map((d) => text.slice(d.moduleRequest.start, d.moduleRequest.end))
      .flatMap((s) => {
        const m = /^(['"`])([^'"`$]+)\1$/.exec(s);
        return m ? [m[2]!] : [];
      }),
  ];
  return [...new Set(requests.filter((r) => r.startsWith('.')))];
}

/** Cycles among the modules (Tarjan's strongly connected components), each as a readable path. */
function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(scc.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!idx.has(v)) visit(v);
  return out;
}

export function checkFloors(root: string, table: FloorTable, tops = ['daemon', 'src', 'cli']): FloorReport {
  const problems: string[] = [];
  const folderOf = new Map<string, string>();
  const allowances = new Map<string, string[]>();
  for (const [floor, { folders }] of Object.entries(table.floors)) {
    if (existsSync(join(root, floor))) problems.push(`floor ${floor} has the name of a path: an allowance of it would be ambiguous`);
    for (const [folder, may] of Object.entries(folders)) {
      if (folderOf.has(folder)) problems.push(`${folder} is named twice (floors ${folderOf.get(folder)} and ${floor})`);
      folderOf.set(folder, floor);
      allowances.set(folder, may);
    }
  }
  const files = sourceFiles(root, tops);
  const folders = new Set(files.map((f) => dirname(f)));
  for (const folder of folders) if (!folderOf.has(folder)) problems.push(`${folder}/ holds code but floors.json does not name it`);
  for (const folder of folderOf.keys()) if (!folders.has(folder)) problems.push(`floors.json names ${folder}/, which holds no code (stale entry)`);

  /** What an allowance covers: a floor (all its folders), a folder, or one file. */
  const covers = (allowance: string, target: string): boolean => {
    const floor = table.floors[allowance];
    if (floor) return Object.hasOwn(floor.folders, dirname(target));
    return allowance === dirname(target) || allowance === target;
  };
  for (const [folder, may] of allowances) {
    for (const a of may) {
      if (!table.floors[a] && !folderOf.has(a) && !existsSync(join(root, a)))
        problems.push(`floors.json: ${folder} may import ${a}, which names no floor, folder or file`);
    }
  }

  const graph = new Map<string, string[]>();
  const used = new Set<string>();
  for (const file of files) {
    const from = dirname(file);
    const targets: string[] = [];
    for (const request of importsOf(root, file)) {
      const target = resolveImport(root, file, request);
      if (!target) {
        problems.push(`${file}: import ${request} names no module`);
        continue;
      }
      targets.push(target);
      if (dirname(target) === from || !tops.some((t) => target.startsWith(`${t}/`))) continue;
      const may = allowances.get(from);
      if (!may) continue;
      const allowance = may.find((a) => covers(a, target));
      if (allowance) used.add(`${from}\0${allowance}`);
      else
        problems.push(
          `${file} imports ${target}: ${from}/ (floor ${folderOf.get(from)}) may not import ${dirname(target)}/ (floor ${folderOf.get(dirname(target)) ?? 'none'})`,
        );
    }
    graph.set(file, targets);
  }
  for (const [folder, may] of allowances) {
    if (!folders.has(folder)) continue;
    for (const a of may)
      if (!used.has(`${folder}\0${a}`)) problems.push(`floors.json: ${folder} may import ${a}, but no import of it does (stale entry)`);
  }
  for (const cycle of cycles(graph)) problems.push(`modules import each other in a circle: ${cycle.join(', ')}`);
  return { problems, modules: files.length };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const root = resolve(dirname(new URL(import.meta.url).pathname), '..');
  const table = JSON.parse(readFileSync(join(root, 'floors.json'), 'utf8')) as FloorTable;
  const { problems, modules } = checkFloors(root, table);
  for (const p of problems) process.stderr.write(`floors: ${p}\n`);
  if (problems.length) process.exit(1);
  process.stdout.write(`floors: ${modules} modules, every import as floors.json allows\n`);
}
