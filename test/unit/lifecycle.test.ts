import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Lifecycle } from '../../daemon/lib/lifecycle.js';

test('parts start and stop in the order they were added and close in the reverse, past one that fails, once', async () => {
  const seen: string[] = [];
  const logged: string[] = [];
  const life = new Lifecycle((msg, extra) => logged.push(`${msg} ${JSON.stringify(extra)}`));
  for (const name of ['store', 'boxes', 'sessions', 'server']) {
    life.add(
      name,
      { name },
      {
        start: (p) => void seen.push(`start ${p.name}`),
        stopping: (p) => void seen.push(`stopping ${p.name}`),
        close: async (p) => {
          await new Promise((r) => setTimeout(r, 5));
          seen.push(`close ${p.name}`);
          if (p.name === 'sessions') throw new Error('a browser would not close');
        },
      },
    );
  }
  life.add('plain', { name: 'plain' });
  await life.start();
  await Promise.all([life.close(), life.close()]);
  await life.close();
  assert.deepEqual(seen, [
    'start store',
    'start boxes',
    'start sessions',
    'start server',
    'stopping store',
    'stopping boxes',
    'stopping sessions',
    'stopping server',
    'close server',
    'close sessions',
    'close boxes',
    'close store',
  ]);
  assert.equal(logged.length, 1);
  assert.match(logged[0]!, /a part failed to close .*"step":"sessions".*a browser would not close/);
});
