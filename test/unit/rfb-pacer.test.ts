import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clientMessageLength, RfbPacer } from '../../daemon/http/gateways/rfb-pacer.js';

// Pure logic: a fake clock and captured writes stand in for the viewer and x11vnc.
function harness(intervalMs = 100) {
  let clock = 0;
  const sent: Buffer[] = [];
  const pacer = new RfbPacer(intervalMs, (b) => sent.push(Buffer.from(b)), { now: () => clock });
  return { pacer, sent, advance: (ms: number) => (clock += ms), bytes: () => Buffer.concat(sent) };
}

const handshake = Buffer.concat([Buffer.from('RFB 003.008\n'), Buffer.from([1]), Buffer.from([1])]);
const fbur = (incremental: number) => Buffer.from([3, incremental, 0, 0, 0, 0, 4, 0, 3, 0]);
const pointer = (x: number) => Buffer.from([5, 0, x >> 8, x & 255, 0, 10]);

test('client message lengths follow RFC 6143, partial messages wait, unknown types say so', () => {
  assert.equal(clientMessageLength(Buffer.from([0, ...new Array(19).fill(0)])), 20);
  assert.equal(clientMessageLength(Buffer.from([2, 0, 0, 3, ...new Array(12).fill(0)])), 16);
  assert.equal(clientMessageLength(Buffer.from([2, 0, 0, 3, 0])), 0);
  assert.equal(clientMessageLength(fbur(1)), 10);
  assert.equal(clientMessageLength(pointer(1).subarray(0, 4)), 0);
  const cut = Buffer.alloc(8 + 5);
  cut[0] = 6;
  cut.writeInt32BE(5, 4);
  assert.equal(clientMessageLength(cut), 13);
  cut.writeInt32BE(-5, 4);
  assert.equal(clientMessageLength(cut), 13);
  assert.equal(clientMessageLength(Buffer.from([99, 0, 0])), -1);
});

test('incremental update requests are held to one per interval; input passes at once, in order', async () => {
  const h = harness(40);
  h.pacer.push(handshake);
  h.pacer.push(fbur(1));
  h.advance(40);
  h.pacer.push(fbur(1));
  assert.equal(h.bytes().length, handshake.length + 20, 'requests one interval apart go at once');
  h.advance(10);
  h.pacer.push(Buffer.concat([fbur(1), pointer(7)]));
  assert.deepEqual(h.sent.at(-1), pointer(7), 'input is not held behind a request');
  h.pacer.push(fbur(1));
  const before = h.sent.length;
  await new Promise((r) => setTimeout(r, 60));
  assert.equal(h.sent.length, before + 1, 'held requests collapse into one');
  assert.deepEqual(h.sent.at(-1), fbur(1));
  h.pacer.close();
});

test('a late frame may be followed by a quicker one, but the rate over time stays at the cap', () => {
  const h = harness(100);
  h.pacer.push(handshake);
  let forwarded = 0;
  const count = () => h.sent.filter((b) => b[0] === 3).length;
  // A viewer asking every 10 ms for 2 s gets about 20 requests through, never 2 within 10 ms after the first.
  for (let t = 0; t < 2000; t += 10) {
    h.pacer.push(fbur(1));
    h.advance(10);
  }
  forwarded = count();
  assert.ok(forwarded <= 2000 / 100 + 1, `${forwarded} requests in 2 s at 10/s`);
  h.pacer.close();
  // After a stall of 250 ms the late request goes, then one catch-up at once, then the pace again.
  const late = harness(100);
  late.pacer.push(handshake);
  late.pacer.push(fbur(1));
  late.advance(250);
  for (let i = 0; i < 3; i++) {
    late.pacer.push(fbur(1));
    late.advance(1);
  }
  const through = late.sent.filter((b) => b[0] === 3).length;
  assert.equal(through, 3, 'the first, the late one and one catch-up; the fourth is held');
  late.pacer.close();
});

test('a non-incremental request is never held, and a message split across chunks is reassembled', () => {
  const h = harness(1000);
  h.pacer.push(handshake);
  h.pacer.push(fbur(1));
  const full = fbur(0);
  h.pacer.push(full.subarray(0, 3));
  h.pacer.push(full.subarray(3));
  assert.deepEqual(h.sent.at(-1), full);
  h.pacer.close();
});

test('an unknown message type switches to pass-through rather than breaking the viewer', () => {
  const h = harness(1000);
  h.pacer.push(handshake);
  h.pacer.push(fbur(1));
  h.pacer.push(Buffer.from([200, 1, 2, 3]));
  h.pacer.push(fbur(1));
  assert.deepEqual(h.bytes().subarray(-14), Buffer.concat([Buffer.from([200, 1, 2, 3]), fbur(1)]));
  h.pacer.close();
});

test('RFB 3.3 has no security choice byte; a security type other than None is not paced', () => {
  const h33 = harness(1000);
  h33.pacer.push(Buffer.concat([Buffer.from('RFB 003.003\n'), Buffer.from([1]), fbur(1), fbur(1)]));
  assert.equal(h33.bytes().length, 12 + 1 + 10, 'the second request is held');
  h33.pacer.close();
  const auth = harness(1000);
  auth.pacer.push(Buffer.concat([Buffer.from('RFB 003.008\n'), Buffer.from([2]), Buffer.alloc(16), fbur(1), fbur(1)]));
  assert.equal(auth.bytes().length, 12 + 1 + 16 + 20);
  auth.pacer.close();
});

test('a read-only viewer: update requests pass, keys, pointer, clipboard and resizes never do; an unknown message cuts it off', () => {
  let clock = 0;
  const sent: Buffer[] = [];
  let cut = 0;
  const pacer = new RfbPacer(40, (b) => sent.push(Buffer.from(b)), { now: () => clock, readOnly: true, unreadable: () => cut++ });
  pacer.push(handshake);
  const key = Buffer.from([4, 1, 0, 0, 0, 0, 0, 0x61]);
  const clip = Buffer.concat([Buffer.from([6, 0, 0, 0, 0, 0, 0, 2]), Buffer.from('hi')]);
  const resize = Buffer.from([251, 0, 1, 0, 1, 0, 0, 0]);
  pacer.push(Buffer.concat([fbur(0), pointer(5), key, clip, resize, fbur(0)]));
  assert.deepEqual(Buffer.concat(sent), Buffer.concat([handshake, fbur(0), fbur(0)]));
  assert.equal(cut, 0);
  // Control: the same bytes from a viewer that may write reach the server whole.
  const writer: Buffer[] = [];
  const open = new RfbPacer(40, (b) => writer.push(Buffer.from(b)), { now: () => clock });
  open.push(handshake);
  open.push(Buffer.concat([pointer(5), key, clip]));
  assert.deepEqual(Buffer.concat(writer), Buffer.concat([handshake, pointer(5), key, clip]));
  // A message type the parser does not know: the read-only viewer is cut off, nothing passes.
  pacer.push(Buffer.from([99, 5, 5, 5, 4, 1, 0, 0, 0, 0, 0, 0x61]));
  assert.equal(cut, 1);
  pacer.push(key);
  assert.deepEqual(Buffer.concat(sent), Buffer.concat([handshake, fbur(0), fbur(0)]));
  clock += 1000;
});
