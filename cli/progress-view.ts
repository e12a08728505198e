import { createElement as h, type ReactNode } from 'react';
import { Box, render, Static, Text } from 'ink';
import Spinner from 'ink-spinner';
import { colorEnabled } from './output.js';

/** What withProgress (progress.ts) shows; this module is loaded only when it draws on a terminal. */
export interface ViewState {
  label: string;
  bar?: { done: number; total: number; text?: string };
  logs: { key: number; line: string }[];
  outcome?: { ok: boolean; text: string };
}

const BAR_WIDTH = 24;

function bar({ done, total, text }: NonNullable<ViewState['bar']>): string {
  const filled = total > 0 ? Math.round((Math.min(done, total) / total) * BAR_WIDTH) : 0;
  return `${'█'.repeat(filled)}${'░'.repeat(BAR_WIDTH - filled)} ${text ?? `${done}/${total}`}`;
}

function ProgressView({ state }: { state: ViewState }): ReactNode {
  // Ink's own colour detection ignores NO_COLOR.
  const color = (c: string) => (colorEnabled() ? c : undefined);
  const line = state.outcome
    ? h(Text, { color: color(state.outcome.ok ? 'green' : 'red') }, `${state.outcome.ok ? '✓' : '✗'} ${state.outcome.text}`)
    : h(Box, { gap: 1 }, h(Text, { color: color('cyan') }, state.bar ? bar(state.bar) : h(Spinner, { type: 'dots' })), h(Text, null, state.label));
  return h(
    Box,
    { flexDirection: 'column' },
    // biome-ignore lint/correctness/noChildrenProp: Ink's Static takes its render function as a prop, and its types require it there
    h(Static<ViewState['logs'][number]>, { items: state.logs, children: (item) => h(Text, { key: item.key }, item.line) }),
    line,
  );
}

/** One spinner or bar on the terminal, redrawn on each change, left as its last frame on close. */
export class ProgressScreen {
  private readonly ink: ReturnType<typeof render>;

  constructor(state: ViewState) {
    this.ink = render(h(ProgressView, { state: { ...state } }), { interactive: true, patchConsole: false, exitOnCtrlC: false });
  }

  draw(state: ViewState): void {
    this.ink.rerender(h(ProgressView, { state: { ...state, logs: [...state.logs] } }));
  }

  async close(): Promise<void> {
    this.ink.unmount();
    await this.ink.waitUntilExit().catch(() => {});
  }
}
