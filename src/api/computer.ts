import { Type, type Static } from 'typebox';
import { IdParamsSchema } from './schemas.js';
import { NoContent, type RouteDef } from './route-def.js';

/** Bodies refuse unknown fields: a typo such as `timout_seconds` must be a 400, not silently dropped. */
const strict = { additionalProperties: false } as const;

// Computer control (kernel-wire "Computer control"; field names as the official SDK sends them).
// Coordinates inside the screen and key names are checked by the daemon (daemon/computer/).
const Coordinate = (description: string) => Type.Integer({ minimum: 0, description });
const HoldKeysSchema = Type.Array(Type.String({ minLength: 1 }), {
  maxItems: 16,
  description: 'Keys held during the action: ctrl, control, alt, shift, super, meta (any case) or X keysyms (Control_L, Shift_R, ...)',
});
const SmoothFields = {
  smooth: Type.Optional(Type.Boolean({ description: 'Accepted for compatibility; rbrowse moves in straight steps' })),
  duration_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 60_000, description: 'Accepted for compatibility; used only with smooth' })),
};

export const DragMouseSchema = Type.Object(
  {
    path: Type.Array(Type.Array(Type.Integer(), { minItems: 2, maxItems: 2 }), {
      minItems: 2,
      maxItems: 1000,
      description: '[x, y] points to move through while the button is held; at least 2',
    }),
    button: Type.Optional(Type.Enum(['left', 'middle', 'right'], { default: 'left' })),
    delay: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 60_000, default: 0, description: 'Milliseconds between button down and the first move' }),
    ),
    steps_per_segment: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 10, description: 'Relative moves per path segment' })),
    step_delay_ms: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 60_000,
        default: 50,
        description: 'Milliseconds between relative moves; the whole drag must take at most 60 s',
      }),
    ),
    hold_keys: Type.Optional(HoldKeysSchema),
    ...SmoothFields,
  },
  strict,
);
export type DragMouseBody = Static<typeof DragMouseSchema>;

export const ScrollSchema = Type.Object(
  {
    x: Coordinate('Where to scroll'),
    y: Coordinate('Where to scroll'),
    delta_x: Type.Optional(
      Type.Integer({
        minimum: -1000,
        maximum: 1000,
        default: 0,
        description: 'Wheel notches; positive scrolls right, negative left (with delta_y 0 too, the pointer only moves there)',
      }),
    ),
    delta_y: Type.Optional(
      Type.Integer({ minimum: -1000, maximum: 1000, default: 0, description: 'Wheel notches; positive scrolls down, negative up' }),
    ),
    hold_keys: Type.Optional(HoldKeysSchema),
  },
  strict,
);
export type ScrollBody = Static<typeof ScrollSchema>;

export const ClickMouseSchema = Type.Object(
  {
    x: Coordinate('Where to click'),
    y: Coordinate('Where to click'),
    button: Type.Optional(Type.Enum(['left', 'right', 'middle', 'back', 'forward'], { default: 'left' })),
    click_type: Type.Optional(Type.Enum(['down', 'up', 'click'], { default: 'click' })),
    num_clicks: Type.Optional(Type.Integer({ minimum: 0, maximum: 100, default: 1, description: 'Clicks in a row; 0 is the default of 1' })),
    hold_keys: Type.Optional(HoldKeysSchema),
  },
  strict,
);
export type ClickMouseBody = Static<typeof ClickMouseSchema>;

export const MoveMouseSchema = Type.Object(
  { x: Coordinate('Where to move'), y: Coordinate('Where to move'), hold_keys: Type.Optional(HoldKeysSchema), ...SmoothFields },
  strict,
);
export type MoveMouseBody = Static<typeof MoveMouseSchema>;

export const TypeTextSchema = Type.Object(
  {
    text: Type.String({ maxLength: 10_000, description: 'Text to type; non-ASCII text is inserted as text' }),
    delay: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 60_000,
        default: 12,
        description: 'Milliseconds between keystrokes; the whole text must type within 60 s',
      }),
    ),
  },
  strict,
);
export type TypeTextBody = Static<typeof TypeTextSchema>;

export const PressKeySchema = Type.Object(
  {
    keys: Type.Array(Type.String({ minLength: 1 }), {
      minItems: 1,
      maxItems: 100,
      description: 'xdotool key names or combinations, pressed in order: Return, F5, ctrl+t, Ctrl+Shift+Tab',
    }),
    duration: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 60_000, default: 0, description: 'Milliseconds to hold each; 0 taps; all of them at most 60 s' }),
    ),
    hold_keys: Type.Optional(HoldKeysSchema),
  },
  strict,
);
export type PressKeyBody = Static<typeof PressKeySchema>;

export const ScreenshotSchema = Type.Object(
  {
    region: Type.Optional(
      Type.Object(
        {
          x: Type.Integer({ minimum: 0 }),
          y: Type.Integer({ minimum: 0 }),
          width: Type.Integer({ minimum: 0 }),
          height: Type.Integer({ minimum: 0 }),
        },
        { ...strict, description: 'A rectangle of the screen; 0x0 (an empty region) is the whole screen' },
      ),
    ),
  },
  strict,
);
export type ScreenshotBody = Static<typeof ScreenshotSchema>;

export const MousePositionSchema = Type.Object({ x: Type.Integer(), y: Type.Integer() });

export const ComputerActionSchema = Type.Object(
  {
    type: Type.Enum(['click_mouse', 'move_mouse', 'type_text', 'press_key', 'scroll', 'drag_mouse', 'set_cursor', 'sleep']),
    click_mouse: Type.Optional(ClickMouseSchema),
    move_mouse: Type.Optional(MoveMouseSchema),
    type_text: Type.Optional(TypeTextSchema),
    press_key: Type.Optional(PressKeySchema),
    scroll: Type.Optional(ScrollSchema),
    drag_mouse: Type.Optional(DragMouseSchema),
    set_cursor: Type.Optional(Type.Object({ hidden: Type.Boolean() }, strict)),
    sleep: Type.Optional(Type.Object({ duration_ms: Type.Integer({ minimum: 0, maximum: 60_000 }) }, strict)),
  },
  { ...strict, description: 'One action: `type` names it and the field of that name carries its parameters' },
);
export type ComputerAction = Static<typeof ComputerActionSchema>;

export const BatchSchema = Type.Object(
  {
    actions: Type.Array(ComputerActionSchema, {
      maxItems: 1000,
      description: 'Run in order; the first error stops the batch. Its sleeps and typing may take 300 s in all',
    }),
  },
  strict,
);
export type BatchBody = Static<typeof BatchSchema>;

export const computerRoutes = {
  // Computer control: one input action at a time per session (daemon/computer/).
  computerDragMouse: {
    method: 'POST',
    url: '/browsers/:id/computer/drag_mouse',
    auth: 'key',
    summary: 'Drag the mouse along a path with a button held (steps_per_segment relative moves per segment)',
    tag: 'computer',
    params: IdParamsSchema,
    body: DragMouseSchema,
    success: NoContent,
  },
  computerScroll: {
    method: 'POST',
    url: '/browsers/:id/computer/scroll',
    auth: 'key',
    summary: 'Scroll the mouse wheel at a position: delta_y notches down (negative up), then delta_x right (negative left)',
    tag: 'computer',
    params: IdParamsSchema,
    body: ScrollSchema,
    success: NoContent,
  },
  computerClickMouse: {
    method: 'POST',
    url: '/browsers/:id/computer/click_mouse',
    auth: 'key',
    summary: 'Click (or press or release) a mouse button at a position',
    tag: 'computer',
    params: IdParamsSchema,
    body: ClickMouseSchema,
    success: NoContent,
  },
  computerMoveMouse: {
    method: 'POST',
    url: '/browsers/:id/computer/move_mouse',
    auth: 'key',
    summary: 'Move the mouse to a position',
    tag: 'computer',
    params: IdParamsSchema,
    body: MoveMouseSchema,
    success: NoContent,
  },
  computerTypeText: {
    method: 'POST',
    url: '/browsers/:id/computer/type',
    auth: 'key',
    summary: 'Type text (non-ASCII text is inserted with CDP Input.insertText)',
    tag: 'computer',
    params: IdParamsSchema,
    body: TypeTextSchema,
    success: NoContent,
  },
  computerPressKey: {
    method: 'POST',
    url: '/browsers/:id/computer/press_key',
    auth: 'key',
    summary: 'Press keys or combinations such as ctrl+t, in order',
    tag: 'computer',
    params: IdParamsSchema,
    body: PressKeySchema,
    success: NoContent,
  },
  computerScreenshot: {
    method: 'POST',
    url: '/browsers/:id/computer/screenshot',
    auth: 'key',
    summary: "A PNG of the session's screen (headful: the X display; headless: the page), optionally a region",
    tag: 'computer',
    params: IdParamsSchema,
    body: ScreenshotSchema,
    success: { status: 200, body: null },
    produces: 'image/png',
  },
  computerGetMousePosition: {
    method: 'POST',
    url: '/browsers/:id/computer/get_mouse_position',
    auth: 'key',
    summary: 'Where the mouse is',
    tag: 'computer',
    params: IdParamsSchema,
    success: { status: 200, body: MousePositionSchema },
  },
  computerReadClipboard: {
    method: 'POST',
    url: '/browsers/:id/computer/clipboard/read',
    auth: 'key',
    summary: "The text on the session's clipboard (its browser's: what a page copied, what ctrl+v pastes)",
    tag: 'computer',
    params: IdParamsSchema,
    success: { status: 200, body: Type.Object({ text: Type.String() }) },
  },
  computerWriteClipboard: {
    method: 'POST',
    url: '/browsers/:id/computer/clipboard/write',
    auth: 'key',
    summary: "Put text on the session's clipboard",
    tag: 'computer',
    params: IdParamsSchema,
    body: Type.Object({ text: Type.String({ maxLength: 16 * 1024 * 1024 }) }, { additionalProperties: false }),
    success: NoContent,
  },
  computerSetCursor: {
    method: 'POST',
    url: '/browsers/:id/computer/cursor',
    auth: 'key',
    summary: "Hide or show the mouse cursor of a headful session's screen (a headless one draws none)",
    tag: 'computer',
    params: IdParamsSchema,
    body: Type.Object({ hidden: Type.Boolean() }, { additionalProperties: false }),
    success: { status: 200, body: Type.Object({ ok: Type.Boolean() }) },
  },
  computerBatch: {
    method: 'POST',
    url: '/browsers/:id/computer/batch',
    auth: 'key',
    summary: 'Run actions in order; the first error stops the batch (400 "actions[i] (type): message")',
    tag: 'computer',
    params: IdParamsSchema,
    body: BatchSchema,
    success: NoContent,
  },
} as const satisfies Record<string, RouteDef>;
