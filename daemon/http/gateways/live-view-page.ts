/**
 * The live-view page: noVNC's RFB client, served by the daemon (no CDN), scaled to the window.
 * It shows a clear state when the session ends, and reconnects after a network blip.
 * `document.body.dataset.state` (connecting, connected, reconnecting, ended) is for scripts and tests.
 */
export function liveViewPage(novncPrefix: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>rbrowse live view</title>
<link rel="icon" href="data:,">
<style>
  html, body { margin: 0; height: 100%; background: #111; overflow: hidden; font: 14px system-ui, sans-serif; }
  #screen { position: absolute; inset: 0; }
  #status { position: fixed; left: 50%; top: 50%; transform: translate(-50%, -50%); color: #eee;
    background: rgba(0, 0, 0, 0.75); padding: 12px 18px; border-radius: 8px; }
  body[data-state="connected"] #status { display: none; }
</style>
</head>
<body data-state="connecting">
<div id="screen"></div>
<div id="status">Connecting…</div>
<script type="module">
import RFB from '${novncPrefix}core/rfb.js';

const params = new URLSearchParams(location.search);
const jwt = params.get('jwt') || '';
const readOnly = params.get('readOnly') === 'true';
const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
const wsUrl = scheme + '://' + location.host + '/browser/live/ws?jwt=' + encodeURIComponent(jwt) + (readOnly ? '&readOnly=true' : '');
const statusUrl = '/browser/live/status?jwt=' + encodeURIComponent(jwt);
const screen = document.getElementById('screen');
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
