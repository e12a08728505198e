import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KeyedSerialQueue, SerialQueue } from '../../daemon/lib/serial-queue.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('serial queues', () => {
  test('SerialQueue: one piece at a time, in order, a failure does not stop the next', async () => {
    const q = new SerialQueue();
    const log: string[] = [];
    const piece = (name: string, ms: number, fail = false) =>
      q.run(async () => {
        log.push(`${name}+`);
        await sleep(ms);
        log.push(`${name}-`);
        if (fail) throw new Error(name);
        return name;
      });
    const results = await Promise.allSettled([piece('a', 20, true), piece('b', 5), piece('c', 1)]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['rejected', 'fulfilled', 'fulfilled'],
    );
    assert.deepEqual(log, ['a+', 'a-', 'b+', 'b-', 'c+', 'c-']);
  });

  test('KeyedSerialQueue: one piece at a time per key, released on errors, other keys unaffected, nothing left behind', async () => {
    const q = new KeyedSerialQueue();
    const log: string[] = [];
    const act = (id: string, name: string, ms: number, fail = false) =>
      q.run(id, async () => {
        log.push(`${name}+`);
        await sleep(ms);
        log.push(`${name}-`);
        if (fail) throw new Error(name);
      });
    const all = Promise.allSettled([act('a', 'a1', 30, true), act('a', 'a2', 10), act('b', 'b1', 5)]);
    assert.equal(q.size, 2);
    const results = await all;
    assert.deepEqual(
      results.map((r) => r.status),
      ['rejected', 'fulfilled', 'fulfilled'],
    );
    assert.deepEqual(log, ['a1+', 'b1+', 'b1-', 'a1-', 'a2+', 'a2-']);
    assert.equal(q.size, 0);
  });
});
