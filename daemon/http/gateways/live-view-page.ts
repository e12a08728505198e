/** Both viewer pages' head: the screen element's style is each page's own. */
const head = (screenStyle: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>rbrowse live view</title>
<link rel="icon" href="data:,">
<style>
  html, body { margin: 0; height: 100%; background: #111; overflow: hidden; font: 14px system-ui, sans-serif; }
  ${screenStyle}
  #status { position: fixed; left: 50%; top: 50%; transform: translate(-50%, -50%); color: #eee;
    background: rgba(0, 0, 0, 0.75); padding: 12px 18px; border-radius: 8px; }
  body[data-state="connected"] #status { display: none; }
</style>
</head>`;

/** Both viewer pages' start: the jwt and read-only flag from the address, the websocket and status URLs, the states shown. */
const COMMON_SCRIPT = `const params = new URLSearchParams(location.search);
const jwt = params.get('jwt') || '';
const readOnly = params.get('readOnly') === 'true';
const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
const wsUrl = scheme + '://' + location.host + '/browser/live/ws?jwt=' + encodeURIComponent(jwt) + (readOnly ? '&readOnly=true' : '');
const statusUrl = '/browser/live/status?jwt=' + encodeURIComponent(jwt);
const status = document.getElementById('status');
let retryMs = 500;

function show(state, text) {
  document.body.dataset.state = state;
  status.textContent = text;
}

async function sessionEnded() {
  try {
    const res = await fetch(statusUrl, { cache: 'no-store' });
    if (res.status === 401 || res.status === 404) return true;
    return (await res.json()).state !== 'active';
  } catch {
    return false; // the daemon is unreachable: a blip, keep trying
  }
}
`;

/**
 * The live-view page: noVNC's RFB client, served by the daemon (no CDN), scaled to the window.
 * It shows a clear state when the session ends, and reconnects after a network blip.
 * `document.body.dataset.state` (connecting, connected, reconnecting, ended) is for scripts and tests.
 */
export function liveViewPage(novncPrefix: string): string {
  return `${head('#screen { position: absolute; inset: 0; }')}
<body data-state="connecting">
<div id="screen"></div>
<div id="status">Connecting…</div>
<script type="module">
import RFB from '${novncPrefix}core/rfb.js';

${COMMON_SCRIPT}
const screen = document.getElementById('screen');

function connect() {
  const rfb = new RFB(screen, wsUrl, { shared: true });
  rfb.scaleViewport = true;
  rfb.resizeSession = false;
  rfb.viewOnly = readOnly;
  rfb.qualityLevel = 9;
  rfb.compressionLevel = 2;
  rfb.addEventListener('connect', () => {
    retryMs = 500;
    show('connected', '');
  });
  rfb.addEventListener('disconnect', async () => {
    if (await sessionEnded()) {
      show('ended', 'This browser session has ended.');
      return;
    }
    show('reconnecting', 'Connection lost; reconnecting…');
    setTimeout(connect, retryMs);
    retryMs = Math.min(retryMs * 2, 5000);
  });
  window.rfb = rfb;
}

if (readOnly) document.title += ' (read-only)';
connect();
</script>
</body>
</html>
`;
}

/**
 * The live-view page of a headless session: the page as the daemon's screencast frames on a
 * canvas, scaled to the window, and the viewer's mouse, wheel and keys sent back in the page's
 * own CSS pixels. The same states as the noVNC page (`document.body.dataset.state`), the same
 * reconnects and the same "ended" screen. A read-only page sends nothing (and the server would
 * drop it anyway).
 */
export function screencastPage(): string {
  return `${head('#screen { position: absolute; inset: 0; width: 100%; height: 100%; object-fit: contain; outline: none; }')}
<body data-state="connecting">
<canvas id="screen" tabindex="0"></canvas>
<div id="status">Connecting…</div>
<script type="module">
${COMMON_SCRIPT}
const canvas = document.getElementById('screen');
const ctx = canvas.getContext('2d');
let ws;
/** The page's size in CSS pixels, from the last frame: input is sent in these. */
let page = { width: 1, height: 1 };
window.frames_drawn = 0;
/** Frames decode concurrently and may finish out of order: one older than the frame on view is dropped, or a still page would stay stale. */
let received = 0;
let onView = 0;

async function draw(buffer) {
  const seq = ++received;
  const view = new DataView(buffer);
  const headerLength = view.getUint32(0);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, headerLength)));
  const image = await createImageBitmap(new Blob([new Uint8Array(buffer, 4 + headerLength)], { type: 'image/jpeg' }));
  if (seq < onView) return image.close();
  onView = seq;
  page = header;
  if (canvas.width !== image.width || canvas.height !== image.height) {
    canvas.width = image.width;
    canvas.height = image.height;
  }
  ctx.drawImage(image, 0, 0);
  image.close();
  window.frames_drawn++;
  if (document.body.dataset.state !== 'connected') show('connected', '');
}

function connect() {
  ws = new WebSocket(wsUrl);
  ws.binaryType = 'arraybuffer';
  ws.onopen = () => { retryMs = 500; };
  ws.onmessage = (e) => { if (e.data instanceof ArrayBuffer) draw(e.data); };
  ws.onclose = async () => {
    if (await sessionEnded()) return show('ended', 'This browser session has ended.');
    show('reconnecting', 'Connection lost; reconnecting…');
    setTimeout(connect, retryMs);
    retryMs = Math.min(retryMs * 2, 5000);
  };
}

function send(message) {
  if (!readOnly && ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(message));
}

/** Where on the page (CSS pixels) a point of the canvas is: the frame is drawn contained and centred. */
function pagePoint(e) {
  const rect = canvas.getBoundingClientRect();
  const scale = Math.min(rect.width / canvas.width, rect.height / canvas.height);
  const left = rect.left + (rect.width - canvas.width * scale) / 2;
  const top = rect.top + (rect.height - canvas.height * scale) / 2;
  const x = ((e.clientX - left) / scale) * (page.width / canvas.width);
  const y = ((e.clientY - top) / scale) * (page.height / canvas.height);
  return { x: Math.round(x), y: Math.round(y) };
}

const modifiers = (e) => (e.altKey ? 1 : 0) | (e.ctrlKey ? 2 : 0) | (e.metaKey ? 4 : 0) | (e.shiftKey ? 8 : 0);
const BUTTON = ['left', 'middle', 'right', 'back', 'forward'];

if (!readOnly) {
  canvas.addEventListener('mousedown', (e) => {
    canvas.focus();
    send({ t: 'mouse', type: 'mousePressed', ...pagePoint(e), button: BUTTON[e.button] || 'left', buttons: e.buttons, clickCount: e.detail || 1, modifiers: modifiers(e) });
    e.preventDefault();
  });
  canvas.addEventListener('mouseup', (e) => {
    send({ t: 'mouse', type: 'mouseReleased', ...pagePoint(e), button: BUTTON[e.button] || 'left', buttons: e.buttons, clickCount: e.detail || 1, modifiers: modifiers(e) });
  });
  canvas.addEventListener('mousemove', (e) => {
    send({ t: 'mouse', type: 'mouseMoved', ...pagePoint(e), buttons: e.buttons, modifiers: modifiers(e) });
  });
  canvas.addEventListener('wheel', (e) => {
    send({ t: 'wheel', ...pagePoint(e), dx: e.deltaX, dy: e.deltaY, modifiers: modifiers(e) });
    e.preventDefault();
  }, { passive: false });
  canvas.addEventListener('contextmenu', (e) => e.preventDefault());
  const key = (type) => (e) => {
    send({ t: 'key', type, key: e.key, code: e.code, keyCode: e.keyCode, text: e.ctrlKey || e.metaKey ? undefined : e.key.length === 1 ? e.key : e.key === 'Enter' ? '\\r' : undefined, modifiers: modifiers(e) });
    e.preventDefault();
  };
  canvas.addEventListener('keydown', key('keyDown'));
  canvas.addEventListener('keyup', key('keyUp'));
}

if (readOnly) document.title += ' (read-only)';
connect();
canvas.focus();
</script>
</body>
</html>
`;
}
