import { createElement as h, useEffect, useState, type ReactNode } from 'react';
import { Box, Text, useApp, useInput, useWindowSize } from 'ink';
import Spinner from 'ink-spinner';
import { ApiCallError } from '../../src/client.js';
import type { WatchSnapshot } from '../../src/api/watch.js';
import { tableLines } from '../output.js';
import type { FeedSource, FeedState } from './connection.js';
import { INVOCATION_HEADERS, invocationRow, POOL_HEADERS, poolRow, SESSION_HEADERS, sessionDetails, sessionRow, visibleWindow } from './model.js';

/** What the dashboard's keys do to the server (or the desktop). */
export interface DashboardActions {
  remove(id: string): Promise<void>;
  create(headless: boolean): Promise<{ session_id: string }>;
  /** A session's live view URL (headless sessions have one too, asked for). */
  liveView(id: string): Promise<string>;
  /** Opens a live view in a desktop browser where there is one; whether it did. */
  open(url: string): boolean;
  /** Puts text on the clipboard of the terminal the dashboard is drawn in (OSC 52), also over SSH. */
  copy(text: string): void;
}

export interface DashboardProps {
  /** Where the feed comes from, for the header. */
  target: string;
  feed: FeedSource;
  actions: DashboardActions;
  /** Colours allowed (a terminal without NO_COLOR). */
  color: boolean;
}

type Mode = { kind: 'list' } | { kind: 'details' } | { kind: 'confirm-delete'; id: string } | { kind: 'create' };
type Message = { text: string; error?: boolean };

/** Lists shorter than this many rows are shown whole; longer ones are cut with a "+N more" line. */
const SIDE_LIST_ROWS = 5;
const KEYS = '↑↓ select  enter details  l live view  u cdp url  d delete  c create  q quit';

const errorText = (err: unknown) => (err instanceof ApiCallError ? `${err.body.code}: ${err.body.message}` : ((err as Error).message ?? String(err)));

/** `rbrowse watch`: the org's sessions, pools and invocations, live from the daemon's feed. */
export function Dashboard({ target, feed, actions, color }: DashboardProps): ReactNode {
  const { exit } = useApp();
  const { columns, rows } = useWindowSize();
  const [feedState, setFeedState] = useState<FeedState>({ status: 'connecting' });
  const [snapshot, setSnapshot] = useState<WatchSnapshot>();
  // The server's clock: countdowns follow it, whatever this machine's clock says.
  const [clock, setClock] = useState({ offset: 0, at: Date.now() });
  const [selection, setSelection] = useState<{ id?: string; index: number }>({ index: 0 });
  const [mode, setMode] = useState<Mode>({ kind: 'list' });
  const [busy, setBusy] = useState<string>();
  const [message, setMessage] = useState<Message>();

  useEffect(() => {
    const unsubscribe = feed.subscribe({
      event: (e) => {
        setClock({ offset: Date.parse(e.server_time) - Date.now(), at: Date.now() });
        if (e.event === 'snapshot') setSnapshot(e);
      },
      state: setFeedState,
    });
    return () => void unsubscribe();
  }, [feed]);

  const now = clock.at + clock.offset;
  const sessions = snapshot?.sessions ?? [];
  const found = sessions.findIndex((w) => w.session.session_id === selection.id);
  const index = found >= 0 ? found : Math.max(0, Math.min(selection.index, sessions.length - 1));
  const selected = sessions[index];
  const select = (i: number) => {
    const w = sessions[Math.max(0, Math.min(i, sessions.length - 1))];
    if (w) setSelection({ id: w.session.session_id, index: sessions.indexOf(w) });
  };

  const run = (label: string, work: () => Promise<string>) => {
    setBusy(label);
    setMessage(undefined);
    work()
      .then((text) => setMessage({ text }))
      .catch((err) => setMessage({ text: errorText(err), error: true }))
      .finally(() => setBusy(undefined));
  };

  useInput((input, key) => {
    if (mode.kind === 'confirm-delete') {
      setMode({ kind: 'list' });
      if (input === 'y' || input === 'Y') {
        run(`deleting ${mode.id}`, async () => {
          await actions.remove(mode.id);
          return `deleted ${mode.id}`;
        });
      } else setMessage({ text: 'not deleted' });
      return;
    }
    if (mode.kind === 'create') {
      const headless = input === 'h' ? true : input === 'f' || key.return ? false : undefined;
      setMode({ kind: 'list' });
      if (headless === undefined) return;
      run(`creating a ${headless ? 'headless' : 'headful'} session`, async () => {
        const s = await actions.create(headless);
        setSelection({ id: s.session_id, index: 0 });
        return `created ${s.session_id}`;
      });
      return;
    }
    if (input === 'q') return exit();
    if (key.upArrow || input === 'k') return select(index - 1);
    if (key.downArrow || input === 'j') return select(index + 1);
    if (key.return) return setMode(mode.kind === 'details' ? { kind: 'list' } : { kind: 'details' });
    if (key.escape) return setMode({ kind: 'list' });
    if (busy) return;
    if (input === 'c') return setMode({ kind: 'create' });
    if (!selected) return;
    const s = selected.session;
    if (input === 'd') return setMode({ kind: 'confirm-delete', id: s.session_id });
    // The URL is printed whole (over several lines: it can be selected) and copied to the terminal's clipboard.
    if (input === 'l') {
      run('asking for the live view', async () => {
        const url = await actions.liveView(s.session_id);
        actions.copy(url);
        return `${actions.open(url) ? 'opened and copied' : 'copied'} live view: ${url}`;
      });
    }
    if (input === 'u') {
      actions.copy(s.cdp_ws_url);
      setMessage({ text: `copied cdp_ws_url: ${s.cdp_ws_url}` });
    }
  });

  const paint = (c: string) => (color ? c : undefined);
  const line = (key: string, text: string, props: object = {}) => h(Text, { key, wrap: 'truncate-end', ...props }, text);

  // Header
  const status =
    feedState.status === 'live'
      ? h(Text, { color: paint('green') }, '● live')
      : h(Text, { color: paint('yellow') }, h(Spinner, { type: 'dots' }), ` ${feedState.status}${feedState.error ? ` (${feedState.error})` : ''}`);
  const header = h(
    Box,
    { key: 'header', gap: 2, height: 1 },
    h(Text, { bold: true }, 'rbrowse watch'),
    h(Text, { wrap: 'truncate-end' }, feedState.baseUrl ?? target),
    status,
  );

  // Side lists: pools and invocations, a few rows each.
  const side = (title: string, headers: string[], all: string[][]): ReactNode[] => {
    const shown = all.slice(0, SIDE_LIST_ROWS);
    const [head, ...body] = tableLines(headers, shown);
    return [
      line(`${title}-gap`, ' '),
      line(`${title}-title`, `${title} (${all.length})`, { bold: true }),
      ...(all.length
        ? [line(`${title}-head`, head!, { dimColor: true }), ...body.map((b, i) => line(`${title}-${i}`, b))]
        : [line(`${title}-none`, '  none', { dimColor: true })]),
      ...(all.length > shown.length ? [line(`${title}-more`, `  +${all.length - shown.length} more`, { dimColor: true })] : []),
    ];
  };
  const pools = side('Pools', POOL_HEADERS, (snapshot?.pools ?? []).map(poolRow));
  const invocations = side(
    'Invocations',
    INVOCATION_HEADERS,
    (snapshot?.invocations ?? []).map((i) => invocationRow(i, now)),
  );
  const details =
    mode.kind === 'details' && selected
      ? [
          line('details-gap', ' '),
          line('details-title', 'Details', { bold: true }),
          // Whole, over as many lines as they take: a URL cut with … could not be copied.
          ...sessionDetails(selected, now).flatMap(([k, v]) =>
            wrapped(`  ${k.padEnd(14)}${v}`, columns).map((part, i) => line(`details-${k}-${i}`, part)),
          ),
        ]
      : [];

  // Status line: a question, work under way, or the last outcome.
  const statusLine =
    mode.kind === 'confirm-delete'
      ? line('status', `Delete session ${mode.id}? y/N`, { color: paint('red'), bold: true })
      : mode.kind === 'create'
        ? line('status', 'Create a session: f headful (enter)  h headless  esc cancel', { bold: true })
        : busy
          ? h(Text, { key: 'status' }, h(Spinner, { type: 'dots' }), ` ${busy}`)
          : h(
              Box,
              { key: 'status', flexDirection: 'column' },
              ...wrapped(message?.text ?? '', columns).map((part, i) => line(`status-${i}`, part, { color: paint(message?.error ? 'red' : 'cyan') })),
            );
  const statusLines = mode.kind === 'list' || mode.kind === 'details' ? (busy ? 1 : wrapped(message?.text ?? '', columns).length) : 1;

  // The sessions table gets whatever height is left.
  const fixed = 1 + 1 + 1 + 1 + pools.length + invocations.length + details.length + 1 + statusLines + 1;
  const [sessionsHead, ...sessionLines] = tableLines(
    SESSION_HEADERS,
    sessions.map((w) => sessionRow(w, now)),
  );
  const room = Math.max(1, rows - fixed);
  const { start, end } = visibleWindow(sessionLines.length, index, room);
  const sessionRows = sessionLines.length
    ? sessionLines.slice(start, end).map((text, i) => {
        const isSelected = start + i === index;
        return line(`s-${start + i}`, `${isSelected ? '›' : ' '} ${text}`, isSelected ? { inverse: true } : {});
      })
    : [line('s-none', feedState.status === 'live' ? '  no sessions: press c to create one' : '', { dimColor: true })];

  return h(
    Box,
    { flexDirection: 'column', width: columns, height: rows },
    header,
    line('gap', ' '),
    line('sessions-title', `Sessions (${sessions.length})${sessionLines.length > room ? `  ${start + 1}-${end} shown` : ''}`, { bold: true }),
    line('sessions-head', `  ${sessionsHead}`, { dimColor: true }),
    ...sessionRows,
    ...pools,
    ...invocations,
    ...details,
    h(Box, { key: 'spacer', flexGrow: 1 }),
    statusLine,
    line('keys', KEYS, { dimColor: true }),
  );
}

/** A text cut into lines of at most `width` characters (none lost). */
function wrapped(text: string, width: number): string[] {
  const size = Math.max(1, width);
  const parts: string[] = [];
  for (let i = 0; i < text.length; i += size) parts.push(text.slice(i, i + size));
  return parts.length ? parts : [''];
}
