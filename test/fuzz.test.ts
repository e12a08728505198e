/**
 * Sends every route of /openapi.json mutated bodies, parameters and headers, built by fast-check
 * from a seed printed first (RBROWSE_FUZZ_SEED=<seed> replays a run; RBROWSE_FUZZ_RUNS sets how
 * many requests a route gets). Nothing may answer 5xx, hang, or answer a 4xx without the error
 * body, and the daemon must be healthy afterwards.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { startTestDaemon, waitFor, type TestDaemon } from './helpers/daemon.js';

const SEED = Number(process.env.RBROWSE_FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RUNS = Number(process.env.RBROWSE_FUZZ_RUNS ?? 12);
const ANSWER_MS = 15_000;

type Schema = Record<string, any>;
interface Operation {
  method: string;
  path: string;
  params: { in: string; name: string; schema?: Schema }[];
  body?: { type: string; schema?: Schema };
}

let d: TestDaemon;
let liveId = '';
before(async () => {
  // One launch at a time and a short queue: the fuzzer's creates must be refused, not pile up.
  d = await startTestDaemon({ env: { RBROWSE_MAX_LAUNCHES: '1', RBROWSE_LAUNCH_QUEUE: '2' } });
  liveId = (await d.api('POST', '/browsers', { headless: true, timeout_seconds: 600 })).body.session_id;
});
after(async () => {
  await d?.stop();
});

function operations(doc: Schema): Operation[] {
  const ops: Operation[] = [];
  for (const [path, byMethod] of Object.entries<Schema>(doc.paths)) {
    for (const [method, op] of Object.entries<Schema>(byMethod)) {
      const content = op.requestBody?.content as Schema | undefined;
      const type = content ? Object.keys(content)[0]! : undefined;
      ops.push({
        method: method.toUpperCase(),
        path,
        params: op.parameters ?? [],
        ...(type ? { body: { type, schema: content![type].schema } } : {}),
      });
    }
  }
  return ops;
}

const weird = fc.oneof(
  fc.constantFrom(
    '',
    '-1',
    '0',
    '1e309',
    'NaN',
    'true',
    'null',
    '[]',
    '{}',
    '%ZZ',
    '../../etc/passwd',
    '/home/kernel/../../root',
    '\u0000',
    'ü\ud800',
    ' ',
  ),
  fc.string({ maxLength: 40 }),
  fc.string({ minLength: 3000, maxLength: 6000 }),
  fc.integer().map(String),
);

const wrongValue = fc.oneof(
  fc.constantFrom(null, true, false, 0, -1, 1e308, -1e308, 2 ** 53 + 1, 0.5, '', [], {}, 'x'.repeat(100_000)),
  fc.string({ maxLength: 30 }),
  fc.anything({ maxDepth: 3 }),
  fc.integer({ min: 1, max: 300 }).map((depth) => {
    let v: unknown = 1;
    for (let i = 0; i < depth; i++) v = { a: v };
    return v;
  }),
);

/** A value the schema would accept, roughly: the starting point mutations break one piece of. */
function plausible(schema: Schema | undefined, doc: Schema, depth = 0): unknown {
  if (!schema || depth > 4) return {};
  if (schema.$ref) return plausible(doc.components?.schemas?.[schema.$ref.split('/').pop()], doc, depth + 1);
  if (schema.enum) return schema.enum[0];
  if (schema.const !== undefined) return schema.const;
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants) return plausible(variants[0], doc, depth + 1);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'object':
      return Object.fromEntries(Object.entries<Schema>(schema.properties ?? {}).map(([k, v]) => [k, plausible(v, doc, depth + 1)]));
    case 'array':
      return [plausible(schema.items, doc, depth + 1)];
    case 'integer':
    case 'number':
      return schema.minimum ?? 1;
    case 'boolean':
      return true;
    case 'string':
      return schema.format === 'uri' ? 'http://127.0.0.1:9/' : 'x';
    default:
      return null;
  }
}

/** One mutated request for an operation. */
const requestFor = (op: Operation, doc: Schema) =>
  fc.record({
    pathValue: fc.oneof(fc.constant(liveId), fc.constant('a'.repeat(24)), weird),
    query: fc.array(fc.tuple(fc.constantFrom(...op.params.filter((p) => p.in === 'query').map((p) => p.name), 'unknown'), weird), { maxLength: 4 }),
    auth: fc.constantFrom('good', 'good', 'good', 'good', 'none', 'bad'),
    body: fc.oneof(
      // Break one field of a plausible body.
      fc.tuple(fc.string({ maxLength: 12 }), wrongValue).map(([k, v]) => {
        const base = plausible(op.body?.schema, doc);
        const keys = base && typeof base === 'object' && !Array.isArray(base) ? Object.keys(base) : [];
        const key = keys.length ? keys[Math.abs(k.length * 7919) % keys.length]! : k || 'x';
        return { kind: 'json' as const, value: JSON.stringify({ ...(base as object), [key]: v }) };
      }),
      fc
        .tuple(fc.string({ maxLength: 12 }), wrongValue)
        .map(([k, v]) => ({ kind: 'json' as const, value: JSON.stringify({ ...(plausible(op.body?.schema, doc) as object), [`unknown_${k}`]: v }) })),
      wrongValue.map((v) => ({ kind: 'json' as const, value: JSON.stringify(v) ?? 'null' })),
      fc.constantFrom('{"a":', '[', '{"x":1}}', '\u0000', '').map((value) => ({ kind: 'json' as const, value })),
      fc.string({ maxLength: 200 }).map((value) => ({ kind: 'text' as const, value })),
      fc.string({ maxLength: 200 }).map((value) => ({
        kind: 'multipart' as const,
        value: `--b\r\nContent-Disposition: form-data; name="file"; filename="a.zip"\r\n\r\n${value}\r\n--b--\r\n`,
      })),
      fc.constant({ kind: 'none' as const, value: '' }),
    ),
  });

type FuzzRequest = ReturnType<typeof requestFor> extends fc.Arbitrary<infer T> ? T : never;

async function send(op: Operation, r: FuzzRequest): Promise<{ status: number; text: string; what: string }> {
  const path = op.path.replace(/\{[^}]+\}/g, () => encodeURIComponent(r.pathValue.toWellFormed()));
  const qs = new URLSearchParams(r.query).toString();
  const url = `${d.baseUrl}${path}${qs ? `?${qs}` : ''}`;
  const headers: Record<string, string> = {};
  if (r.auth === 'good') headers.authorization = `Bearer ${d.apiKey}`;
  if (r.auth === 'bad') headers.authorization = 'Bearer sk_nope';
  const hasBody = !['GET', 'HEAD'].includes(op.method) && r.body.kind !== 'none';
  if (hasBody) {
    const types = { json: 'application/json', text: 'text/plain', multipart: 'multipart/form-data; boundary=b' };
    headers['content-type'] = types[r.body.kind as keyof typeof types];
  }
  const what = `${op.method} ${url.slice(0, 300)} ${hasBody ? `${r.body.kind} ${r.body.value.slice(0, 200)}` : ''}`;
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), ANSWER_MS);
  try {
    const res = await fetch(url, { method: op.method, headers, body: hasBody ? r.body.value : undefined, signal: ac.signal });
    // Event streams stay open by design: their status and headers are the answer.
    const text = res.headers.get('content-type')?.startsWith('text/event-stream') ? '' : await res.text();
    return { status: res.status, text, what };
  } catch (err) {
    throw new Error(`no answer within ${ANSWER_MS} ms (${(err as Error).message}): ${what}`);
  } finally {
    clearTimeout(timer);
    ac.abort();
  }
}

test(`every route of /openapi.json, fuzzed (seed ${SEED}): no 5xx, no hang, an error body on every 4xx`, { timeout: 15 * 60_000 }, async (t) => {
  t.diagnostic(`RBROWSE_FUZZ_SEED=${SEED} RBROWSE_FUZZ_RUNS=${RUNS}`);
  const doc = (await d.api('GET', '/openapi.json')).body as Schema;
  const ops = operations(doc);
  assert.ok(ops.length > 50, `${ops.length} operations`);
  const statuses = new Map<number, number>();
  for (const [i, op] of ops.entries()) {
    const samples = fc.sample(requestFor(op, doc), { seed: SEED + i, numRuns: RUNS });
    for (const r of samples) {
      const { status, text, what } = await send(op, r);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      assert.ok(status < 500, `${status} for ${what}\n${text.slice(0, 500)}`);
      if (status >= 400) {
        let body: any;
        try {
          body = JSON.parse(text);
        } catch {
          assert.fail(`${status} without a JSON error body for ${what}: ${text.slice(0, 200)}`);
        }
        const said = `${status} ${text.slice(0, 300)} for ${what}`;
        assert.equal(typeof body?.code, 'string', `error code: ${said}`);
        assert.equal(typeof body?.message, 'string', `error message: ${said}`);
      }
    }
  }
  t.diagnostic(`statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`);
  assert.equal((await d.api('GET', '/health', undefined, null)).status, 200, 'healthy afterwards');
  const after = await d.api('GET', `/browsers/${liveId}?include_deleted=true`);
  assert.equal(after.status, 200, 'the session the fuzzer aimed at still answers');
});

test('write_file with a valid path and mutated query, headers and body (the fuzzer found 500s here): no 5xx, an error body on every 4xx', async () => {
  const modes = [undefined, '', '0', '644', '0644', '777', '999', 'abc', '-1', '1e309', '0o644', '\u0000'];
  const types = [
    undefined,
    'application/octet-stream',
    'application/json',
    'text/plain',
    'multipart/form-data',
    'application/x-www-form-urlencoded',
    '*/*',
  ];
  const bodies = [Buffer.alloc(0), Buffer.from('{"a":1}'), Buffer.from([0xff, 0xfe, 0x00, 0x01]), Buffer.alloc(64 * 1024, 0x41)];
  let served = 0;
  // A session of its own: the fuzzer's requests above may have ended the shared one.
  // (one launch at a time here: a create is retried while another is refused with 429)
  const target = await waitFor(
    async () => (await d.api('POST', '/browsers', { headless: true })).body.session_id as string | undefined,
    60_000,
    'a session to fuzz',
  );
  for (let i = 0; i < 60; i++) {
    const query = new URLSearchParams({ path: `/tmp/fuzz-${i}.txt` });
    const mode = modes[i % modes.length];
    if (mode !== undefined) query.set('mode', mode);
    if (i % 5 === 0) query.append('path', '/tmp/second');
    const headers: Record<string, string> = { authorization: `Bearer ${d.apiKey}` };
    const type = types[i % types.length];
    if (type) headers['content-type'] = type;
    const res = await fetch(`${d.baseUrl}/browsers/${target}/fs/write_file?${query}`, {
      method: 'PUT',
      headers,
      body: bodies[i % bodies.length],
      signal: AbortSignal.timeout(ANSWER_MS),
    });
    const text = await res.text();
    const what = `mode=${mode} type=${type} body#${i % bodies.length}`;
    assert.ok(res.status < 500, `${res.status} for ${what}: ${text.slice(0, 300)}`);
    if (res.status >= 400) assert.equal(typeof JSON.parse(text).code, 'string', `${res.status} ${text} for ${what}`);
    else served++;
  }
  // Control: the well-formed ones among them were written.
  assert.ok(served > 0, 'some writes succeeded');
  await d.api('DELETE', `/browsers/${target}`);
});
