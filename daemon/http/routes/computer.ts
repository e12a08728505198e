import type { ComputerControl } from '../../in-session/computer/computer.js';
import type { HandlerGroup } from '../handlers.js';

export function computerHandlers(
  computer: ComputerControl,
): HandlerGroup<
  | 'computerDragMouse'
  | 'computerScroll'
  | 'computerClickMouse'
  | 'computerMoveMouse'
  | 'computerTypeText'
  | 'computerPressKey'
  | 'computerScreenshot'
  | 'computerGetMousePosition'
  | 'computerBatch'
  | 'computerReadClipboard'
  | 'computerWriteClipboard'
  | 'computerSetCursor'
> {
  return {
    computerDragMouse: ({ org, params, body }) => computer.dragMouse(org, params.id, body),
    computerScroll: ({ org, params, body }) => computer.scroll(org, params.id, body),
    computerClickMouse: ({ org, params, body }) => computer.clickMouse(org, params.id, body),
    computerMoveMouse: ({ org, params, body }) => computer.moveMouse(org, params.id, body),
    computerTypeText: ({ org, params, body }) => computer.typeText(org, params.id, body),
    computerPressKey: ({ org, params, body }) => computer.pressKey(org, params.id, body),
    computerScreenshot: ({ org, params, body }) => computer.screenshot(org, params.id, body),
    computerGetMousePosition: ({ org, params }) => computer.mousePosition(org, params.id),
    computerBatch: ({ org, params, body }) => computer.batch(org, params.id, body),
    computerReadClipboard: ({ org, params }) => computer.readClipboard(org, params.id),
    computerWriteClipboard: ({ org, params, body }) => computer.writeClipboard(org, params.id, body.text),
    computerSetCursor: ({ org, params, body }) => computer.setCursor(org, params.id, body.hidden),
  };
}
