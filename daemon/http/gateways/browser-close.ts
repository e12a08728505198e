/**
 * Finds the CDP commands that would end the whole browser (the session) rather than a client's
 * connection: Browser.close and Browser.crash, sent to the browser or to any target's session,
 * flat (`sessionId`) or inside Target.sendMessageToTarget.
 *
 * Chromium reads a command's JSON more loosely than JSON.parse in one way: it takes control
 * characters raw inside strings. Letters and dots can be escaped only as `\u` sequences, so a
 * command that spells neither name plainly nor holds a `\u` cannot be one of them, and JSON.parse
 * stays off nearly every command. One that might be and that JSON.parse cannot read even with its
 * control characters blanked is taken as one: nothing Chromium would run is let through unread.
 */

export type ClosingCommand =
  /** Sent flat: answered (as Browser.getVersion, under its id and session) before only its connection closes. */
  | { kind: 'flat'; id: number; sessionId?: string }
  /** Inside another command, or unreadable: its connection is closed without an answer. */
  | { kind: 'hidden' };

const METHODS = new Set(['Browser.close', 'Browser.crash']);
/** Buffers, not strings: Buffer.includes() encodes a string needle afresh on every call. */
const NAME = Buffer.from('Browser.c');
const ESCAPE = Buffer.from('\\u');
/** Target.sendMessageToTarget inside Target.sendMessageToTarget...: past this depth, taken as closing. */
const MAX_DEPTH = 8;

export function closingCommand(text: Buffer): ClosingCommand | undefined {
  if (!text.includes(NAME) && !text.includes(ESCAPE)) return undefined;
  const message = parse(text.toString('utf8'));
  if (message === undefined) return { kind: 'hidden' };
  if (closes(message)) {
    // Chromium refuses a command without a number id, so such a one closes nothing.
    if (typeof message.id !== 'number') return undefined;
    return { kind: 'flat', id: message.id, ...(typeof message.sessionId === 'string' ? { sessionId: message.sessionId } : {}) };
  }
  return carriesClosing(message, 1) ? { kind: 'hidden' } : undefined;
}

interface Command {
  id?: unknown;
  method?: unknown;
  sessionId?: unknown;
  params?: unknown;
}

function parse(json: string): Command | undefined {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    try {
      // Blanking keeps every string's structure; outside strings it can only let more through.
      value = JSON.parse(json.replace(/[\u0000-\u001f]/g, ' '));
    } catch {
      return undefined;
    }
  }
  // Chromium takes only an object as a command; anything else is answered with an error.
  return typeof value === 'object' && value !== null ? (value as Command) : {};
}

const closes = (message: Command): boolean => typeof message.method === 'string' && METHODS.has(message.method);

/** Whether a command carried inside this one (and so on) closes the browser. */
function carriesClosing(message: Command, depth: number): boolean {
  if (message.method !== 'Target.sendMessageToTarget') return false;
  const inner = (message.params as { message?: unknown } | null | undefined)?.message;
  if (typeof inner !== 'string' || (!inner.includes('Browser.c') && !inner.includes('\\u'))) return false;
  if (depth > MAX_DEPTH) return true;
  const parsed = parse(inner);
  return parsed === undefined || closes(parsed) || carriesClosing(parsed, depth + 1);
}
