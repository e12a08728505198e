import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newId } from '../../src/ids.js';

test('ids are Kernel-shaped: 24 lowercase alphanumerics, a letter first, never repeated', () => {
  const ids = Array.from({ length: 20_000 }, newId);
  for (const id of ids) assert.match(id, /^[a-z][a-z0-9]{23}$/);
  assert.equal(new Set(ids).size, ids.length);
  // Every character of the alphabet shows up in every position after the first: no position is stuck.
  for (let i = 1; i < 24; i++) assert.equal(new Set(ids.map((id) => id[i])).size, 36, `position ${i}`);
});
