import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { inProcessServer, KEYS } from '../helpers/in-process-server.js';

const file = join(dirname(new URL(import.meta.url).pathname), '..', '..', 'docs', 'openapi.json');

// The document /openapi.json serves is checked in, so a change to the contract shows in review.
// `npm run openapi` writes it anew after a deliberate change.
test('docs/openapi.json is the document the daemon serves', async (t) => {
  const server = await inProcessServer();
  t.after(() => server.close());
  const res = await server.app.inject({ method: 'GET', url: '/openapi.json', headers: { host: '127.0.0.1', authorization: `Bearer ${KEYS.acme}` } });
  assert.equal(res.statusCode, 200);
  const served = `${JSON.stringify(JSON.parse(res.body), null, 2)}\n`;
  if (process.env.RBROWSE_WRITE_OPENAPI === '1') writeFileSync(file, served);
  const checkedIn = readFileSync(file, 'utf8');
  assert.ok(checkedIn === served, 'docs/openapi.json differs from the served document: run `npm run openapi` and review the change');
});
