// The browser REPL's runtime (POST /browsers/{id}/repl): one long-lived Node process inside the
// session's namespace, as the session's user. The daemon sends JSON lines on stdin (first
// {cdp, replId}, then one {seq, code} per cell, one at a time) and reads one JSON answer per cell
// on fd 3, so nothing the code prints can be taken for an answer. Cells are evaluated by Node's
// own REPL evaluator, which keeps top-level bindings between cells and takes top-level await.
// A cell that runs past its timeout is killed with this whole process by the daemon.
import { readFileSync, writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
import repl from 'node:repl';
import { createInterface } from 'node:readline';
import { PassThrough } from 'node:stream';
import { formatWithOptions } from 'node:util';
import vm from 'node:vm';
import CDP from 'chrome-remote-interface';

/** Kernel's limits per answer: text kept, each image, all images. */
const TEXT_MAX = 256 * 1024;
const IMAGE_MAX = 8 * 1024 * 1024;
const IMAGES_MAX = 16 * 1024 * 1024;
/** A CDP-backed custom tool's output, as JSON. */
const TOOL_OUTPUT_MAX = 240 * 1024;
/** DevTools events kept for drainEvents(), newest last. */
const EVENTS_KEPT = 500;

// Bare imports the code makes (`await import("playwright-core")`) fall back to rbrowse's own
// packages when the session has none of that name: the REPL resolves them from its working
// directory, the session's home.
const RUNTIME_ROOT = new URL('../../../package.json', import.meta.url).href;
registerHooks({
  resolve(specifier, context, nextResolve) {
    try {
      return nextResolve(specifier, context);
    } catch (err) {
      const bare = !/^(\.|\/|[a-z]+:)/i.test(specifier);
      if (!bare || (err?.code !== 'ERR_MODULE_NOT_FOUND' && err?.code !== 'MODULE_NOT_FOUND')) throw err;
      return nextResolve(specifier, { ...context, parentURL: RUNTIME_ROOT });
    }
  },
});

/** One answer on fd 3; one that cannot be JSON (a BigInt, a cycle in a tool's output) says so instead. */
function answers(line) {
  let text;
  try {
    text = JSON.stringify(line);
  } catch (err) {
    text = JSON.stringify({ seq: line.seq, success: false, error: `the answer cannot be sent as JSON: ${err.message}` });
  }
  writeFileSync(3, `${text}\n`);
}

// ---- the cell being run, and what it outputs --------------------------------------------------

/** The running cell: its output items and what they weigh; output arriving between cells is dropped. */
let cell;

function addText(channel, text) {
  if (!cell || text === '') return;
  const room = TEXT_MAX - cell.textBytes;
  if (room <= 0) return void (cell.truncated = true);
  let kept = text;
  if (Buffer.byteLength(text) > room) {
    kept = Buffer.from(text).subarray(0, room).toString();
    cell.truncated = true;
  }
  cell.textBytes += Buffer.byteLength(kept);
  const last = cell.content.at(-1);
  if (last?.type === 'text' && last.channel === channel) last.text += kept;
  else cell.content.push({ type: 'text', channel, text: kept });
}

const show = (values) => formatWithOptions({ depth: 4, maxArrayLength: 100, maxStringLength: 10_000, breakLength: 120 }, ...values);
const line =
  (channel) =>
  (...values) =>
    addText(channel, `${show(values)}\n`);
const capturedConsole = Object.freeze({
  ...console,
  log: line('stdout'),
  info: line('stdout'),
  debug: line('stdout'),
  dir: (value) => addText('stdout', `${show([value])}\n`),
  table: line('stdout'),
  warn: line('stderr'),
  error: line('stderr'),
  trace: (...values) => addText('stderr', `Trace: ${show(values)}\n${new Error().stack.split('\n').slice(2).join('\n')}\n`),
});
// What the code writes to the process's own streams counts as its stdout and stderr.
for (const [stream, channel] of [
  [process.stdout, 'stdout'],
  [process.stderr, 'stderr'],
]) {
  stream.write = (chunk, encoding, done) => {
    addText(channel, typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString());
    (typeof encoding === 'function' ? encoding : done)?.();
    return true;
  };
}

function sniff(bytes) {
  if (bytes.subarray(0, 8).equals(Buffer.from('89504e470d0a1a0a', 'hex'))) return 'image/png';
  if (bytes.subarray(0, 3).equals(Buffer.from('ffd8ff', 'hex'))) return 'image/jpeg';
  if (bytes.subarray(0, 4).toString() === 'RIFF' && bytes.subarray(8, 12).toString() === 'WEBP') return 'image/webp';
  throw new Error('repl.emitImage: not a PNG, JPEG or WebP image (give mimeType)');
}

/** repl.emitImage's input as bytes and a MIME type. */
function imageOf(input) {
  if (typeof input === 'string') {
    const m = /^data:(image\/[\w.+-]+);base64,(.*)$/s.exec(input);
    if (!m) throw new Error('repl.emitImage: a string must be an image/* data URL');
    return { bytes: Buffer.from(m[2], 'base64'), mime: m[1] };
  }
  if (input instanceof ArrayBuffer || ArrayBuffer.isView(input)) {
    const bytes = Buffer.from(input instanceof ArrayBuffer ? input : input.buffer.slice(input.byteOffset, input.byteOffset + input.byteLength));
    return { bytes, mime: sniff(bytes) };
  }
  if (input && typeof input === 'object' && (input.path || input.bytes)) {
    const bytes = input.path ? readFileSync(input.path) : imageOf(input.bytes).bytes;
    return { bytes, mime: input.mimeType ?? sniff(bytes) };
  }
  throw new Error('repl.emitImage: give image bytes, an image data URL, {bytes, mimeType?} or {path, mimeType?}');
}

async function emitImage(input) {
  if (!cell) return;
  const { bytes, mime } = imageOf(await input);
  if (bytes.length === 0) throw new Error('repl.emitImage: the image is empty');
  if (bytes.length > IMAGE_MAX || cell.imageBytes + bytes.length > IMAGES_MAX) return void (cell.truncated = true);
  cell.imageBytes += bytes.length;
  cell.content.push({ type: 'image', mime_type: mime, data_b64: bytes.toString('base64') });
}

// ---- the browser helpers ------------------------------------------------------------------------

let cdpUrl;
let client;
/** The tab the helpers act on: its target id and flattened DevTools session. */
let attached;
const events = [];
const waiters = new Set();
/** Per DevTools session: requests in flight (for waitForNetworkIdle) and an open JavaScript dialog. */
const pages = new Map();

async function connection() {
  if (client) return client;
  const c = await CDP({ target: cdpUrl, local: true });
  c.on('event', (message) => {
    const event = {
      method: message.method,
      params: message.params,
      ...(message.sessionId ? { sessionId: message.sessionId } : {}),
      time: Date.now(),
    };
    events.push(event);
    if (events.length > EVENTS_KEPT) events.shift();
    track(event);
    for (const w of waiters) w(event);
  });
  c.on('disconnect', () => forget(c));
  client = c;
  return c;
}

/** The tab attached when the connection went: attached again on the next use. */
let lastTargetId;

function forget(c) {
  if (client !== c) return;
  client = undefined;
  if (attached) lastTargetId = attached.targetId;
  attached = undefined;
  pages.clear();
  sessions.clear();
}

/**
 * Between calls the REPL holds no DevTools connection: an open one keeps a session active, as
 * any client's does, and a session left with a REPL would never reach its inactivity timeout.
 */
async function letGo() {
  const c = client;
  if (!c) return;
  forget(c);
  await c.close().catch(() => {});
}

function track({ method, params, sessionId }) {
  const page = pages.get(sessionId);
  if (!page) return;
  if (method === 'Network.requestWillBeSent') page.inFlight.add(params.requestId);
  else if (method === 'Network.loadingFinished' || method === 'Network.loadingFailed') page.inFlight.delete(params.requestId);
  else if (method === 'Page.javascriptDialogOpening') page.dialog = { type: params.type, message: params.message, url: params.url };
  else if (method === 'Page.javascriptDialogClosed') page.dialog = undefined;
  else if (method === 'Page.frameNavigated' && !params.frame.parentId) page.inFlight.clear();
  if (method === 'Target.detachedFromTarget') {
    pages.delete(params.sessionId);
    if (attached?.sessionId === params.sessionId) attached = undefined;
  }
}

/** One DevTools command: to the attached tab (sessionId undefined), the browser (null) or a session. */
async function cdp(method, params = {}, sessionId) {
  const c = await connection();
  const session = sessionId === undefined ? (await attachedTab()).sessionId : (sessionId ?? undefined);
  return c.send(method, params, session);
}

async function attachedTab() {
  if (attached) return attached;
  if (await ensureRealTab()) return attached;
  throw new Error('no tab is attached: open one with newTab(url)');
}

const isInternal = (url) => /^(chrome|devtools|chrome-extension|chrome-untrusted):/.test(url);
const tabView = (t) => ({ targetId: t.targetId, title: t.title, url: t.url });

async function targets() {
  const { targetInfos } = await (await connection()).send('Target.getTargets');
  return targetInfos;
}

async function listTabs(includeChrome = true) {
  return (await targets()).filter((t) => t.type === 'page' && (includeChrome || !isInternal(t.url))).map(tabView);
}

/** A flattened DevTools session on a target, made once and ready for the helpers (page, runtime and network events on). */
const sessions = new Map();
async function attachTo(targetId) {
  const known = sessions.get(targetId);
  if (known && pages.has(known)) return known;
  const c = await connection();
  const { sessionId } = await c.send('Target.attachToTarget', { targetId, flatten: true });
  pages.set(sessionId, { inFlight: new Set() });
  sessions.set(targetId, sessionId);
  await Promise.all(['Page.enable', 'Runtime.enable', 'Network.enable'].map((m) => c.send(m, {}, sessionId).catch(() => {})));
  return sessionId;
}

async function switchTab(target) {
  const targetId = typeof target === 'string' ? target : target?.targetId;
  if (!targetId) throw new Error('switchTab: give a target id or a tab from listTabs()');
  const sessionId = await attachTo(targetId);
  attached = { targetId, sessionId };
  return sessionId;
}

async function currentTab() {
  const { targetId } = await attachedTab();
  const t = (await targets()).find((x) => x.targetId === targetId);
  return t ? tabView(t) : null;
}

async function ensureRealTab() {
  const open = (await targets()).filter((t) => t.type === 'page');
  const kept = attached?.targetId ?? lastTargetId;
  if (kept && open.some((t) => t.targetId === kept)) {
    if (!attached) await switchTab(kept);
    return currentTab();
  }
  const real = open.find((t) => !isInternal(t.url)) ?? open[0];
  if (!real) return null;
  await switchTab(real.targetId);
  return tabView(real);
}

async function newTab(url) {
  const current = attached ? (await targets()).find((t) => t.targetId === attached.targetId) : undefined;
  if (!current || !/^(about:blank|chrome:\/\/newtab\/?)$/.test(current.url)) {
    const { targetId } = await (await connection()).send('Target.createTarget', { url: 'about:blank' });
    await switchTab(targetId);
  }
  if (url) await gotoUrl(url);
  return attached.targetId;
}

async function closeTab(target) {
  const targetId = target === undefined ? (await attachedTab()).targetId : typeof target === 'string' ? target : target.targetId;
  await (await connection()).send('Target.closeTarget', { targetId });
  if (attached?.targetId === targetId) attached = undefined;
}

async function iframeTarget(urlSubstring) {
  const t = (await targets()).find((x) => x.type === 'iframe' && x.url.includes(urlSubstring));
  return t ? { targetId: t.targetId, url: t.url, title: t.title, type: t.type } : null;
}

const gotoUrl = (url) => cdp('Page.navigate', { url });

/** A DevTools value as JavaScript: NaN, infinities, -0 and bigints included. */
function decode(result) {
  if ('value' in result) return result.value;
  const u = result.unserializableValue;
  if (u === undefined) return undefined;
  if (u.endsWith('n')) return BigInt(u.slice(0, -1));
  return { NaN, Infinity, '-Infinity': -Infinity, '-0': -0 }[u];
}

function encode(value) {
  if (value === undefined) return {};
  if (typeof value === 'bigint') return { unserializableValue: `${value}n` };
  if (typeof value === 'number' && (!Number.isFinite(value) || Object.is(value, -0)))
    return { unserializableValue: String(Object.is(value, -0) ? '-0' : value) };
  return { value };
}

/** Page JavaScript: a string expression, or a function called once in the page with options.arg. */
async function js(expressionOrFunction, options = {}) {
  const sessionId = options.targetId ? await attachTo(options.targetId) : undefined;
  let r;
  if (typeof expressionOrFunction === 'function') {
    const { result: global } = await cdp('Runtime.evaluate', { expression: 'globalThis' }, sessionId);
    r = await cdp(
      'Runtime.callFunctionOn',
      {
        functionDeclaration: expressionOrFunction.toString(),
        objectId: global.objectId,
        arguments: [encode(options.arg)],
        awaitPromise: true,
        returnByValue: true,
      },
      sessionId,
    );
  } else {
    r = await cdp('Runtime.evaluate', { expression: String(expressionOrFunction), awaitPromise: true, returnByValue: true }, sessionId);
  }
  if (r.exceptionDetails) throw new Error(r.exceptionDetails.exception?.description ?? r.exceptionDetails.text);
  return decode(r.result);
}

async function pageInfo() {
  const { sessionId } = await attachedTab();
  const dialog = pages.get(sessionId)?.dialog ?? null;
  if (dialog) {
    const { targetInfo } = await cdp('Target.getTargetInfo', { targetId: attached.targetId }, null);
    return { url: targetInfo.url, title: targetInfo.title, dialog };
  }
  const info = await js(() => ({
    url: location.href,
    title: document.title,
    viewport: { width: innerWidth, height: innerHeight },
    document: { width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight },
    scroll: { x: scrollX, y: scrollY },
    readyState: document.readyState,
  }));
  return { ...info, dialog: null };
}

const waitMs = (ms = 1000) => new Promise((resolve) => setTimeout(resolve, ms));

async function poll(check, timeoutSec) {
  const end = Date.now() + timeoutSec * 1000;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > end) return false;
    await waitMs(100);
  }
}

const waitForLoad = (timeoutSec = 15) => poll(async () => (await js('document.readyState').catch(() => '')) === 'complete', timeoutSec);

async function waitForNetworkIdle(idleSec = 0.5, timeoutSec = 30) {
  const { sessionId } = await attachedTab();
  let quietSince = Date.now();
  return poll(() => {
    if ((pages.get(sessionId)?.inFlight.size ?? 0) > 0) quietSince = Date.now();
    return Date.now() - quietSince >= idleSec * 1000;
  }, timeoutSec);
}

function waitForEvent(method, options = {}) {
  const { predicate, timeoutSec = 30 } = options;
  const sessionId = 'sessionId' in options ? (options.sessionId ?? undefined) : attached?.sessionId;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(null), timeoutSec * 1000);
    const done = (value, err) => {
      clearTimeout(timer);
      waiters.delete(waiter);
      err ? reject(err) : resolve(value);
    };
    const waiter = (event) => {
      if (event.method !== method || event.sessionId !== sessionId) return;
      try {
        if (!predicate || predicate(event)) done(event);
      } catch (err) {
        done(undefined, err);
      }
    };
    waiters.add(waiter);
  });
}

function drainEvents() {
  return events.splice(0, events.length);
}

// Elements: a CSS selector, an accessibility node or {backendNodeId}, or (clicks) {x, y}.
const backendIdOf = (target) => (target && typeof target === 'object' ? target.backendNodeId : undefined);

/** The element's remote object in the attached page, or undefined when it is not there. */
async function elementObject(target) {
  const backendNodeId = backendIdOf(target);
  if (backendNodeId !== undefined) return (await cdp('DOM.resolveNode', { backendNodeId }).catch(() => ({}))).object?.objectId;
  const { result } = await cdp('Runtime.evaluate', { expression: `document.querySelector(${JSON.stringify(String(target))})` });
  return result.subtype === 'null' ? undefined : result.objectId;
}

const onElement = async (objectId, fn) =>
  decode((await cdp('Runtime.callFunctionOn', { functionDeclaration: fn.toString(), objectId, returnByValue: true, awaitPromise: true })).result);

/** Where to click an element once it is visible, enabled, still and on top; undefined until then. */
async function clickPoint(target, timeoutSec) {
  let point;
  const ok = await poll(async () => {
    const objectId = await elementObject(target);
    if (!objectId) return false;
    point = await onElement(objectId, async function () {
      if (this.disabled) return undefined;
      this.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
      const a = this.getBoundingClientRect();
      await new Promise(requestAnimationFrame);
      const b = this.getBoundingClientRect();
      if (a.width === 0 || a.height === 0 || a.x !== b.x || a.y !== b.y) return undefined;
      const x = b.x + b.width / 2;
      const y = b.y + b.height / 2;
      const top = document.elementFromPoint(x, y);
      return top && (top === this || this.contains(top)) ? { x, y } : undefined;
    }).catch(() => undefined);
    return point !== undefined;
  }, timeoutSec);
  if (!ok)
    throw new Error(`click: ${typeof target === 'string' ? target : 'the element'} was not visible, enabled and unobscured within ${timeoutSec} s`);
  return point;
}

async function click(target, options = {}) {
  const { button = 'left', clickCount = 1, timeoutSec = 10 } = options;
  const point = target && typeof target === 'object' && 'x' in target && 'y' in target ? target : await clickPoint(target, timeoutSec);
  await cdp('Input.dispatchMouseEvent', { type: 'mouseMoved', x: point.x, y: point.y });
  for (let i = 1; i <= clickCount; i++) {
    await cdp('Input.dispatchMouseEvent', { type: 'mousePressed', x: point.x, y: point.y, button, clickCount: i });
    await cdp('Input.dispatchMouseEvent', { type: 'mouseReleased', x: point.x, y: point.y, button, clickCount: i });
  }
}

const typeText = (text) => cdp('Input.insertText', { text: String(text) });

/** Keys by their DOM name: key code, code and the text they type. */
const KEYS = {
  Enter: [13, 'Enter', '\r'],
  Tab: [9, 'Tab'],
  Escape: [27, 'Escape'],
  Backspace: [8, 'Backspace'],
  Delete: [46, 'Delete'],
  ArrowUp: [38, 'ArrowUp'],
  ArrowDown: [40, 'ArrowDown'],
  ArrowLeft: [37, 'ArrowLeft'],
  ArrowRight: [39, 'ArrowRight'],
  Home: [36, 'Home'],
  End: [35, 'End'],
  PageUp: [33, 'PageUp'],
  PageDown: [34, 'PageDown'],
  ' ': [32, 'Space', ' '],
  Shift: [16, 'ShiftLeft'],
  Control: [17, 'ControlLeft'],
  Alt: [18, 'AltLeft'],
  Meta: [91, 'MetaLeft'],
};
const ALIASES = {
  return: 'Enter',
  esc: 'Escape',
  spacebar: ' ',
  space: ' ',
  up: 'ArrowUp',
  down: 'ArrowDown',
  left: 'ArrowLeft',
  right: 'ArrowRight',
  ctrl: 'Control',
  cmd: 'Meta',
};
const MODIFIER_BITS = { alt: 1, control: 2, ctrl: 2, meta: 4, cmd: 4, shift: 8 };

function modifierBits(modifiers) {
  if (typeof modifiers === 'number') return modifiers;
  const names = Array.isArray(modifiers) ? modifiers : Object.entries(modifiers ?? {}).flatMap(([k, v]) => (v ? [k] : []));
  return names.reduce((bits, name) => bits | (MODIFIER_BITS[String(name).toLowerCase()] ?? 0), 0);
}

async function pressKey(key, modifiers) {
  let name = String(key);
  if (name.length > 1) {
    const lower = name.toLowerCase();
    name = ALIASES[lower] ?? Object.keys(KEYS).find((k) => k.toLowerCase() === lower) ?? name;
  }
  const known = KEYS[name];
  const bits = modifierBits(modifiers);
  const upper = name.length === 1 ? name.toUpperCase() : '';
  const [keyCode, code, text] = known ?? [
    upper.charCodeAt(0) || 0,
    /[A-Z]/.test(upper) ? `Key${upper}` : /[0-9]/.test(name) ? `Digit${name}` : '',
    name,
  ];
  if (!known && name.length !== 1) throw new Error(`pressKey: unknown key ${key}`);
  // Text only for a plain key: Control+A selects, it does not type "a".
  const typed = bits & ~8 ? undefined : text;
  const common = { key: name, code, windowsVirtualKeyCode: keyCode, nativeVirtualKeyCode: keyCode, modifiers: bits };
  await cdp('Input.dispatchKeyEvent', {
    type: typed ? 'keyDown' : 'rawKeyDown',
    ...common,
    ...(typed ? { text: typed, unmodifiedText: typed } : {}),
  });
  await cdp('Input.dispatchKeyEvent', { type: 'keyUp', ...common });
}

async function fillInput(target, text, options = {}) {
  const { clearFirst = true, timeoutSec = 10 } = options;
  let objectId;
  const ok = await poll(async () => {
    objectId = await elementObject(target);
    if (!objectId) return false;
    return onElement(objectId, function () {
      const r = this.getBoundingClientRect();
      return r.width > 0 && r.height > 0 && !this.disabled && !this.readOnly && (this.isContentEditable || 'value' in this);
    });
  }, timeoutSec);
  if (!ok)
    throw new Error(
      `fillInput: ${typeof target === 'string' ? target : 'the element'} was not a visible, enabled, editable field within ${timeoutSec} s`,
    );
  await onElement(objectId, function () {
    this.scrollIntoView({ block: 'center', behavior: 'instant' });
    this.focus();
  });
  if (clearFirst) {
    await onElement(objectId, function () {
      if ('select' in this) this.select();
      else document.getSelection().selectAllChildren(this);
    });
    await pressKey('Delete');
  }
  await typeText(text);
  await onElement(objectId, function () {
    this.dispatchEvent(new Event('input', { bubbles: true }));
    this.dispatchEvent(new Event('change', { bubbles: true }));
  });
}

const scroll = (x, y, dy = -300, dx = 0) => cdp('Input.dispatchMouseEvent', { type: 'mouseWheel', x, y, deltaX: dx, deltaY: dy });

async function dispatchKey(selector, key = 'Enter', event = 'keypress') {
  const codes = { Enter: 13, Tab: 9, Escape: 27, ' ': 32 };
  return js(
    ({ selector, key, event, code }) => {
      const el = document.querySelector(selector);
      if (!el) throw new Error(`no element matches ${selector}`);
      el.dispatchEvent(new KeyboardEvent(event, { key, keyCode: code, which: code, bubbles: true, cancelable: true }));
      return true;
    },
    { arg: { selector, key, event, code: codes[key] ?? key.charCodeAt(0) } },
  );
}

async function captureScreenshot(path = '/tmp/shot.png', fullPage = false, maxDim) {
  const metrics = await cdp('Page.getLayoutMetrics');
  const size = fullPage ? metrics.cssContentSize : metrics.cssVisualViewport;
  const width = size.width ?? size.clientWidth;
  const height = size.height ?? size.clientHeight;
  const scale = maxDim && Math.max(width, height) > maxDim ? maxDim / Math.max(width, height) : 1;
  const params = { format: 'png', captureBeyondViewport: fullPage };
  if (fullPage || scale !== 1) Object.assign(params, { clip: { x: fullPage ? 0 : size.pageX, y: fullPage ? 0 : size.pageY, width, height, scale } });
  const { data } = await cdp('Page.captureScreenshot', params);
  writeFileSync(path, Buffer.from(data, 'base64'));
  return path;
}

async function accessibilitySnapshot() {
  await cdp('Accessibility.enable').catch(() => {});
  const { nodes } = await cdp('Accessibility.getFullAXTree');
  const info = await pageInfo();
  const compact = (s) =>
    String(s ?? '')
      .replace(/\s+/g, ' ')
      .trim();
  return {
    url: info.url,
    title: info.title,
    nodes: nodes
      .filter((n) => !n.ignored && n.backendDOMNodeId !== undefined)
      .map((n) => {
        const node = { backendNodeId: n.backendDOMNodeId, role: n.role?.value ?? '', name: compact(n.name?.value) };
        if (n.value?.value !== undefined && n.value.value !== '') node.value = n.value.value;
        for (const p of n.properties ?? []) {
          if (
            ['focused', 'checked', 'disabled', 'expanded', 'selected', 'pressed', 'required'].includes(p.name) &&
            p.value.value !== undefined &&
            p.value.value !== false
          ) {
            node[p.name] = p.value.value;
          }
        }
        return node;
      }),
  };
}

async function waitForElement(target, options = {}) {
  const { state = 'visible', timeoutSec = 10 } = options;
  return poll(async () => {
    const objectId = await elementObject(target).catch(() => undefined);
    if (state === 'attached') return objectId !== undefined;
    if (state === 'detached') return objectId === undefined;
    const visible = objectId
      ? await onElement(objectId, function () {
          const r = this.getBoundingClientRect();
          return r.width > 0 && r.height > 0 && getComputedStyle(this).visibility !== 'hidden';
        }).catch(() => false)
      : false;
    return state === 'visible' ? visible : !visible;
  }, timeoutSec);
}

async function uploadFile(target, pathOrPaths) {
  const files = Array.isArray(pathOrPaths) ? pathOrPaths : [pathOrPaths];
  if (files.length === 0) throw new Error('uploadFile: give at least one path');
  const backendNodeId = backendIdOf(target);
  const node = backendNodeId !== undefined ? { backendNodeId } : { objectId: await elementObject(target) };
  if (!node.backendNodeId && !node.objectId) throw new Error(`uploadFile: no element matches ${target}`);
  await cdp('DOM.setFileInputFiles', { files, ...node });
}

async function httpGet(url, headers = {}, timeoutSec = 20) {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(timeoutSec * 1000) });
  const body = await res.text();
  if (!res.ok) throw new Error(`httpGet: ${res.status} ${res.statusText} from ${url}`);
  return body;
}

const helpers = {
  cdp,
  drainEvents,
  waitForEvent,
  gotoUrl,
  pageInfo,
  accessibilitySnapshot,
  click,
  typeText,
  fillInput,
  pressKey,
  scroll,
  dispatchKey,
  captureScreenshot,
  listTabs,
  currentTab,
  switchTab,
  newTab,
  closeTab,
  ensureRealTab,
  iframeTarget,
  waitMs,
  waitForLoad,
  waitForElement,
  waitForNetworkIdle,
  js,
  uploadFile,
  httpGet,
};

// ---- the REPL ------------------------------------------------------------------------------------

const server = repl.start({ input: new PassThrough(), output: new PassThrough(), terminal: false, useGlobal: false, prompt: '' });
// Node's evaluator hands an error thrown by the code to its domain; the running cell gets it.
server._domain.removeAllListeners('error');
server._domain.on('error', (err) => {
  if (cell) cell.finish(err);
  else crash(err);
});
process.on('unhandledRejection', (err) => (cell ? addText('stderr', `Unhandled rejection: ${show([err])}\n`) : crash(err)));
process.on('uncaughtException', (err) => (cell ? cell.finish(err) : crash(err)));

/** An error no cell was there to take: this REPL ends, as Kernel's does, and the next request starts a fresh one. */
function crash(err) {
  try {
    answers({ crashed: `${err?.stack ?? err}` });
  } finally {
    process.exit(1);
  }
}

/** A cell's error as Kernel reports it: the message, and the stack without the evaluator's own frames. */
function failure(err) {
  // The code's errors come from the REPL's own realm: not instances of this one's Error.
  if (typeof err !== 'object' || typeof err.message !== 'string') return { error: show([err]) };
  const stack = typeof err.stack === 'string' ? err.stack.split('\n') : [];
  const ours = stack.findIndex((l) => /\((node:vm|node:repl|node:domain):/.test(l) || /at (node:vm|node:repl|node:domain):/.test(l));
  return { error: err.message || String(err), ...(stack.length ? { stack: (ours > 0 ? stack.slice(0, ours) : stack).join('\n') } : {}) };
}

function run({ seq, code }) {
  return new Promise((resolve) => {
    const started = Date.now();
    cell = {
      content: [],
      textBytes: 0,
      imageBytes: 0,
      truncated: false,
      finish(err) {
        if (cell !== this) return;
        cell = undefined;
        const failed = err === undefined || err === null ? {} : failure(err);
        resolve({
          seq,
          success: !('error' in failed),
          content: this.content,
          content_truncated: this.truncated,
          duration_ms: Date.now() - started,
          ...failed,
        });
      },
    };
    const mine = cell;
    if (code.trim() === '') return mine.finish();
    server.eval(code, server.context, 'repl', (err) => mine.finish(err));
  });
}

// ---- WebMCP custom tools --------------------------------------------------------------------------

/** A function's source as an expression: a method (`execute(input) {...}`) becomes a function. */
function functionSource(fn) {
  const text = fn.toString();
  if (/^(async\s*)?(function\b|\(|[\w$]+\s*=>)/.test(text)) return text;
  const async = /^async\s+/.exec(text);
  return `${async ? 'async ' : ''}function ${async ? text.slice(async[0].length) : text}`;
}

/**
 * Custom tool definitions (POST .../webmcp/custom-tools): the source is evaluated apart from the
 * REPL's bindings, and each definition comes back as its metadata and its execute function's
 * source, which runs later in the page (kind "page") or here (kind "cdp").
 */
function define(source) {
  const value = vm.runInNewContext(`(${source}\n)`, {}, { timeout: 5000, filename: 'custom-tools' });
  if (!Array.isArray(value) || value.length === 0) throw new Error('the source must evaluate to a non-empty array of tool definitions');
  return value.map((d, i) => {
    if (!d || typeof d !== 'object') throw new Error(`definition ${i}: not an object`);
    if (typeof d.execute !== 'function') throw new Error(`definition ${i}: execute must be a function`);
    return { ...JSON.parse(JSON.stringify({ kind: d.kind, match: d.match, tool: d.tool }) ?? '{}'), execute: functionSource(d.execute) };
  });
}

/** A CDP-backed custom tool: its execute runs with the REPL's helpers, on the tab it was invoked for. */
async function callTool({ execute, input, targetId }) {
  const before = attached;
  try {
    await switchTab(targetId);
    const fn = vm.runInContext(`(${execute}\n)`, server.context);
    const output = (await fn(input, { targetId })) ?? null;
    // Kernel's cap; what is larger is an error here, not a cut result.
    if (JSON.stringify(output).length > TOOL_OUTPUT_MAX) throw new Error(`the tool's output is larger than ${TOOL_OUTPUT_MAX / 1024} KiB as JSON`);
    return output;
  } finally {
    attached = before;
  }
}

/** Runs a request other than a cell; its answer, or its failure as a cell's. */
async function answer(seq, work) {
  try {
    return { seq, success: true, ...(await work()) };
  } catch (err) {
    return { seq, success: false, ...failure(err) };
  }
}

const input = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
let started = false;
for await (const text of input) {
  const message = JSON.parse(text);
  if (!started) {
    started = true;
    cdpUrl = message.cdp;
    process.env.CDP_ENDPOINT = message.cdp;
    const browser = Object.freeze({ ...helpers });
    Object.assign(server.context, helpers, {
      browser,
      console: capturedConsole,
      repl: Object.freeze({ id: message.replId, write: (value) => addText('write', typeof value === 'string' ? value : show([value])), emitImage }),
    });
    answers({ ready: true });
    continue;
  }
  let reply;
  if (message.define !== undefined) reply = await answer(message.seq, async () => ({ definitions: define(message.define) }));
  else if (message.tool) reply = await answer(message.seq, async () => ({ output: await callTool(message.tool) }));
  else reply = await run(message);
  await letGo();
  answers(reply);
}
process.exit(0);
