// The CDP gateway's frame reader (pure logic): real masked frames made by ws's own Sender, fed
// whole and cut at every byte, must come out unchanged, with Browser.close found however it is
// framed, a close frame ending the scan and what the protocol forbids refused.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import * as ws from 'ws';
import { ClientFrames, HOLD_REFUSED, holdBudget, type ScanStop } from '../../daemon/lib/websocket-client-frames.js';

const { Sender } = ws as unknown as {
  Sender: { frame(data: Buffer, o: { fin: boolean; rsv1: boolean; opcode: number; mask: boolean; readOnly: boolean }): Buffer[] };
};
const frame = (data: string | Buffer, o: { opcode?: number; fin?: boolean; mask?: boolean; rsv1?: boolean } = {}) =>
  Buffer.concat(
    Sender.frame(Buffer.from(data), { fin: o.fin ?? true, rsv1: o.rsv1 ?? false, opcode: o.opcode ?? 1, mask: o.mask ?? true, readOnly: true }),
  );

/** Every text message the last scanner was shown, as text. */
let seen: string[] = [];
const scanner = (maxMessage = 1 << 20, hold = holdBudget(1 << 30)) => {
  seen = [];
  return new ClientFrames<string>({
    maxMessage,
    inspectUpTo: 64,
    inspect: (text) => {
      seen.push(text.toString());
      return text.includes('"Browser.close"') ? text.toString() : undefined;
    },
    hold,
  });
};

/** Feeds `stream` in pieces of `step` bytes: what was passed on and how it stopped. */
function feed(stream: Buffer, step: number, frames = scanner()): { forwarded: Buffer; stop?: ScanStop<string>; messages: number } {
  const out: Buffer[] = [];
  let stop: ScanStop<string> | undefined;
  for (let i = 0; i < stream.length && !stop; i += step) {
    const r = frames.scan(stream.subarray(i, i + step));
    // Copied as they come: the scan may hand back views of a chunk the caller then reuses.
    for (const piece of r.forward) out.push(Buffer.from(piece));
    stop = r.stop;
  }
  return { forwarded: Buffer.concat(out), stop, messages: frames.messages };
}

const everyCut = (stream: Buffer, check: (r: ReturnType<typeof feed>, step: number) => void) => {
  for (const step of [stream.length, 1, 2, 3, 5, 7, 13, 64, 127]) check(feed(stream, step), step);
};

describe('a websocket client stream read frame by frame', () => {
  test('frames of every length class pass unchanged, however the stream is cut', () => {
    const stream = Buffer.concat([
      frame('{"id":1,"method":"Runtime.evaluate"}'),
      frame('x'.repeat(200)),
      frame(Buffer.alloc(70_000, 7), { opcode: 2 }),
      frame('ping', { opcode: 9 }),
      frame('part one ', { fin: false }),
      frame('part two', { opcode: 0 }),
      frame(''),
    ]);
    everyCut(stream, (r, step) => {
      assert.equal(r.stop, undefined, `cut every ${step}`);
      assert.ok(r.forwarded.equals(stream), `cut every ${step}`);
      assert.equal(r.messages, 5, `cut every ${step}`);
    });
  });

  test('Browser.close is claimed whole; what came before it passes, nothing after it', () => {
    const before = Buffer.concat([frame('{"id":1,"method":"Page.enable"}'), frame(Buffer.alloc(300, 1), { opcode: 2 })]);
    const close = '{"id":2,"method":"Browser.close"}';
    const stream = Buffer.concat([before, frame(close), frame('{"id":3,"method":"Page.reload"}')]);
    everyCut(stream, (r, step) => {
      assert.deepEqual(r.stop, { kind: 'claimed', value: close }, `cut every ${step}`);
      assert.ok(r.forwarded.equals(before), `cut every ${step}`);
    });
  });

  test('a longer or fragmented Browser.close is held whole and claimed, none of it passed on', () => {
    const before = frame('{"id":1,"method":"Page.enable"}');
    const padded = `{"id":2,${' '.repeat(5000)}"method":"Browser.close"}`;
    const cases: [string, Buffer][] = [
      ['padded past what is looked at in place', frame(padded)],
      ['in two fragments', Buffer.concat([frame('{"id":2,"method":"Brow', { fin: false }), frame('ser.close"}', { opcode: 0 })])],
      [
        'in fragments with a ping between them and an empty last one',
        Buffer.concat([
          frame(padded.slice(0, 3001), { fin: false }),
          frame('', { opcode: 9 }),
          frame(padded.slice(3001), { opcode: 0, fin: false }),
          frame('', { opcode: 0 }),
        ]),
      ],
    ];
    for (const [what, close] of cases) {
      everyCut(Buffer.concat([before, close, frame('{"id":3}')]), (r, step) => {
        assert.equal(r.stop?.kind, 'claimed', `${what}, cut every ${step}`);
        assert.ok(r.forwarded.equals(before), `${what}, cut every ${step}: only what came before`);
      });
    }
  });

  test('held messages reach inspect exactly as sent and pass on unchanged, whatever their alignment', () => {
    const texts = ['a'.repeat(65), 'é'.repeat(1000), 'x'.repeat(70_001), '{"id":9,"method":"Runtime.evaluate","params":{"expression":"1"}}'];
    for (const text of texts) {
      for (const cut of [1, 2, 3, 5, 4097]) {
        // Fragments of every length around the word size, so each starts at a different offset.
        const bytes = Buffer.from(text);
        const parts: Buffer[] = [];
        for (let at = 0, n = 1; at < bytes.length; at += n, n = (n % 7) + 1) {
          const last = at + n >= bytes.length;
          parts.push(frame(bytes.subarray(at, at + n), { opcode: at === 0 ? 1 : 0, fin: last }));
        }
        for (const stream of [frame(bytes), Buffer.concat(parts)]) {
          const r = feed(stream, cut);
          assert.equal(r.stop, undefined);
          assert.ok(r.forwarded.equals(stream), `passed on unchanged (${text.length} chars, cut every ${cut})`);
          assert.deepEqual(seen, [text], `inspected whole (${text.length} chars, cut every ${cut})`);
        }
      }
    }
  });

  test('what is held counts against the shared budget, refused with 1009 past it and given back', () => {
    const hold = holdBudget(10_000);
    const long = frame('y'.repeat(8000));
    const first = scanner(1 << 20, hold);
    const started = first.scan(long.subarray(0, 5000));
    assert.deepEqual([started.forward.length, started.stop], [0, undefined], 'nothing of an unfinished long message goes on');
    assert.equal(hold.held, 5000);
    // A second connection's long message passes the budget.
    const second = feed(long, 8000, scanner(1 << 20, hold));
    assert.deepEqual(second.stop, { kind: 'refuse', ...HOLD_REFUSED });
    assert.equal(hold.held, 5000, 'the refused one holds nothing');
    first.release();
    assert.equal(hold.held, 0, 'a connection that ends lets go of what it held');
    // Alone now, the same message passes whole.
    const r = feed(long, 3000, scanner(1 << 20, hold));
    assert.equal(r.stop, undefined);
    assert.ok(r.forwarded.equals(long));
    assert.equal(hold.held, 0, 'a passed message is given back');
  });

  test("a close frame is passed on and ends the scan; the client's later bytes are not", () => {
    const stream = Buffer.concat([frame('{"id":1}'), frame(Buffer.from([0x03, 0xe8]), { opcode: 8 })]);
    everyCut(Buffer.concat([stream, frame('late')]), (r, step) => {
      assert.deepEqual(r.stop, { kind: 'close' }, `cut every ${step}`);
      assert.ok(r.forwarded.equals(stream), `cut every ${step}`);
    });
  });

  test('a message past the limit is refused with 1009 at its header, also when its fragments add up past it', () => {
    const ok = frame('fits');
    const whole = Buffer.concat([ok, frame(Buffer.alloc(2000), { opcode: 2 })]);
    const r = feed(whole, 7, scanner(1000));
    assert.equal(r.stop?.kind === 'refuse' && r.stop.code, 1009);
    assert.ok(r.forwarded.equals(ok), 'only the frames before it');
    const fragments = Buffer.concat([frame(Buffer.alloc(600), { opcode: 2, fin: false }), frame(Buffer.alloc(600), { opcode: 0 })]);
    const f = feed(fragments, 5, scanner(1000));
    assert.equal(f.stop?.kind === 'refuse' && f.stop.code, 1009);
    assert.equal(f.forwarded.length, 600 + 8, 'the first fragment passed');
    // A 64-bit length no message reaches, refused before any payload.
    const huge = Buffer.from([0x82, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 1, 2, 3, 4]);
    assert.equal(feed(huge, 1).stop?.kind, 'refuse');
  });

  test('what the protocol forbids of a client is refused with 1002, after the good frames before it', () => {
    const good = frame('{"id":1}');
    const bad: [string, Buffer][] = [
      ['unmasked', frame('x', { mask: false })],
      ['an RSV bit', frame('x', { rsv1: true })],
      ['an unknown opcode', frame('x', { opcode: 3 })],
      ['a fragmented control frame', frame('x', { opcode: 9, fin: false })],
      ['a control frame over 125 bytes', frame('x'.repeat(126), { opcode: 10 })],
      ['a continuation of nothing', frame('x', { opcode: 0 })],
      ['a new message inside a fragmented one', Buffer.concat([frame('a', { fin: false }), frame('b')])],
    ];
    for (const [what, frames] of bad) {
      const r = feed(Buffer.concat([good, frames]), 3);
      assert.equal(r.stop?.kind === 'refuse' && r.stop.code, 1002, what);
      assert.ok(r.forwarded.subarray(0, good.length).equals(good), what);
    }
  });
});
