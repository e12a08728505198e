/**
 * Kernel's `cdp_command` telemetry events: the browser-control commands a client sends over
 * `cdp_ws_url` (input, navigation, dialogs, file choosers, screenshots, targets), one event each,
 * read from the client's text messages as the relay passes them on. Configuration commands and
 * the DOM and Runtime traffic a client library sends for itself are not reported.
 *
 * An event keeps only what cannot hold a secret: numbers, flags, enum values and ids; typed text
 * becomes its length, a URL its scheme, file paths their count. The relay finds the method with a
 * byte search first, so JSON.parse runs only on the commands reported (few next to the rest).
 */

/** Kernel's list (its BrowserCdpCommandEvent variants), in its order. */
export const CONTROL_METHODS: ReadonlySet<string> = new Set([
  'Input.dispatchMouseEvent',
  'Input.dispatchKeyEvent',
  'Input.insertText',
  'Input.imeSetComposition',
  'Input.dispatchTouchEvent',
  'Input.dispatchDragEvent',
  'Input.cancelDragging',
  'Input.emulateTouchFromMouseEvent',
  'Input.synthesizePinchGesture',
  'Input.synthesizeScrollGesture',
  'Input.synthesizeTapGesture',
  'DOM.setFileInputFiles',
  'DOM.focus',
  'DOM.scrollIntoViewIfNeeded',
  'Page.bringToFront',
  'Page.captureScreenshot',
  'Page.captureSnapshot',
  'Page.handleJavaScriptDialog',
  'Page.navigate',
  'Page.navigateToHistoryEntry',
  'Page.reload',
  'Page.printToPDF',
  'Page.startScreencast',
  'Page.stopScreencast',
  'Page.stopLoading',
  'Page.close',
  'Page.setWebLifecycleState',
  'Target.activateTarget',
  'Target.closeTarget',
  'Target.createTarget',
  'Target.createBrowserContext',
  'Target.disposeBrowserContext',
  'Target.openDevTools',
  'Browser.cancelDownload',
  'Browser.close',
  'Browser.setWindowBounds',
  'Browser.setContentsSize',
  'Autofill.trigger',
]);

/** One reported command: its method, id and CDP session, and its approved arguments (snake_case). */
export type CdpCommandData = { method: string; command_id?: number; session_id?: string } & Record<string, unknown>;

const METHOD_KEY = Buffer.from('"method":');
const QUOTE = 0x22;
/** A method name is short; past this, the message is not looked at further. */
const MAX_METHOD = 64;
/** Opaque ids and enum values, clipped as Kernel clips them. */
const MAX_ID = 128;

/** Arguments that are enum values: kept when they look like one, else `other`. */
const ENUMS: Record<string, string> = {
  type: 'event_type',
  button: 'button',
  pointerType: 'pointer_type',
  format: 'format',
  transitionType: 'transition_type',
  referrerPolicy: 'referrer_policy',
  mode: 'mode',
  state: 'state',
  windowState: 'window_state',
  gestureSourceType: 'gesture_source_type',
  behavior: 'behavior',
};
/** Arguments that are opaque ids: kept, clipped. */
const IDS = new Set(['frameId', 'targetId', 'browserContextId', 'guid', 'windowId', 'nodeId', 'backendNodeId', 'objectId', 'fieldId']);
/** Arguments whose text is never kept: only how long it is. */
const LENGTHS: Record<string, string> = {
  text: 'text_length',
  unmodifiedText: 'unmodified_text_length',
  promptText: 'prompt_text_length',
};

const snake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const enumValue = (v: string) => (/^[A-Za-z][A-Za-z0-9_-]{0,39}$/.test(v) ? v : 'other');

/**
 * The method of a client's message when it is one Kernel reports, found without parsing: the
 * value of its first `"method":` key. Undefined for anything else (most messages).
 */
export function controlMethod(text: Buffer): string | undefined {
  const at = text.indexOf(METHOD_KEY);
  if (at < 0) return undefined;
  let start = at + METHOD_KEY.length;
  while (text[start] === 0x20) start++;
  if (text[start] !== QUOTE) return undefined;
  const end = text.indexOf(QUOTE, start + 1);
  if (end < 0 || end - start > MAX_METHOD) return undefined;
  const method = text.toString('latin1', start + 1, end);
  return CONTROL_METHODS.has(method) ? method : undefined;
}

/** The reported form of a control command (its method found by controlMethod), or undefined when its JSON does not read. */
export function describeCommand(text: Buffer, method: string): CdpCommandData | undefined {
  let message: { id?: unknown; method?: unknown; sessionId?: unknown; params?: unknown };
  try {
    message = JSON.parse(text.toString('utf8'));
  } catch {
    return undefined;
  }
  // The byte search found another "method" than the command's own (one inside its params).
  if (typeof message !== 'object' || message === null || message.method !== method) return undefined;
  const data: CdpCommandData = { method };
  if (typeof message.id === 'number') data.command_id = message.id;
  if (typeof message.sessionId === 'string') data.session_id = message.sessionId.slice(0, MAX_ID);
  const params = message.params;
  if (typeof params === 'object' && params !== null && !Array.isArray(params)) Object.assign(data, approved(params as Record<string, unknown>));
  return data;
}

/** The arguments that cannot hold a secret, as Kernel keeps them; everything else is left out. */
function approved(params: Record<string, unknown>, prefix = ''): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(params)) {
    const name = prefix + snake(key);
    if (typeof value === 'number' || typeof value === 'boolean') out[name] = value;
    else if (typeof value === 'string') {
      if (LENGTHS[key]) out[prefix + LENGTHS[key]] = [...value].length;
      else if (ENUMS[key]) out[prefix + ENUMS[key]] = enumValue(value);
      else if (IDS.has(key)) out[name] = value.slice(0, MAX_ID);
      else if (key === 'url') out[`${prefix}url_scheme`] = /^([a-z][a-z0-9+.-]*):/i.exec(value)?.[1]?.toLowerCase() ?? 'other';
      else if (key === 'referrer') out[`${prefix}referrer_present`] = value.length > 0;
      // A key that commands the page (Enter, Tab, ArrowDown) is named; one that types a character is not.
      else if (key === 'key' && [...value].length > 1) out[`${prefix}named_key`] = enumValue(value);
    } else if (Array.isArray(value)) {
      if (key === 'files') out[`${prefix}file_count`] = value.length;
      else if (key === 'touchPoints') out[`${prefix}touch_point_count`] = value.length;
    } else if (typeof value === 'object' && value !== null && (key === 'clip' || key === 'bounds')) {
      Object.assign(out, approved(value as Record<string, unknown>, `${snake(key)}_`));
    }
  }
  return out;
}
