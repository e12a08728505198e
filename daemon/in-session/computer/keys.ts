import { BadRequestError } from '../../../src/errors.js';

/** One key, as xdotool names it and as CDP's Input.dispatchKeyEvent describes it. */
export interface Key {
  /** The X keysym xdotool presses. */
  keysym: string;
  key: string;
  code: string;
  keyCode: number;
  text?: string;
  /** CDP modifier bit: Alt 1, Ctrl 2, Meta 4, Shift 8. */
  modifier?: number;
}

const named = (keysym: string, key: string, code: string, keyCode: number, extra: Partial<Key> = {}): Key => ({
  keysym,
  key,
  code,
  keyCode,
  ...extra,
});

const modifier = (keysym: string, key: string, code: string, keyCode: number, bit: number) => named(keysym, key, code, keyCode, { modifier: bit });

const CTRL = modifier('Control_L', 'Control', 'ControlLeft', 17, 2);
const ALT = modifier('Alt_L', 'Alt', 'AltLeft', 18, 1);
const SHIFT = modifier('Shift_L', 'Shift', 'ShiftLeft', 16, 8);
const SUPER = modifier('Super_L', 'Meta', 'MetaLeft', 91, 4);
const META = modifier('Meta_L', 'Meta', 'MetaLeft', 91, 4);

/** xdotool's aliases and the X keysyms clients use, by lower-cased name (names are case-insensitive). */
const KEYS: Record<string, Key> = {
  ctrl: CTRL,
  control: CTRL,
  control_l: CTRL,
  control_r: modifier('Control_R', 'Control', 'ControlRight', 17, 2),
  alt: ALT,
  alt_l: ALT,
  alt_r: modifier('Alt_R', 'Alt', 'AltRight', 18, 1),
  shift: SHIFT,
  shift_l: SHIFT,
  shift_r: modifier('Shift_R', 'Shift', 'ShiftRight', 16, 8),
  super: SUPER,
  super_l: SUPER,
  super_r: modifier('Super_R', 'Meta', 'MetaRight', 92, 4),
  meta: META,
  meta_l: META,
  meta_r: modifier('Meta_R', 'Meta', 'MetaRight', 92, 4),
  return: named('Return', 'Enter', 'Enter', 13, { text: '\r' }),
  enter: named('Return', 'Enter', 'Enter', 13, { text: '\r' }),
  tab: named('Tab', 'Tab', 'Tab', 9),
  escape: named('Escape', 'Escape', 'Escape', 27),
  esc: named('Escape', 'Escape', 'Escape', 27),
  backspace: named('BackSpace', 'Backspace', 'Backspace', 8),
  delete: named('Delete', 'Delete', 'Delete', 46),
  insert: named('Insert', 'Insert', 'Insert', 45),
  home: named('Home', 'Home', 'Home', 36),
  end: named('End', 'End', 'End', 35),
  page_up: named('Page_Up', 'PageUp', 'PageUp', 33),
  prior: named('Page_Up', 'PageUp', 'PageUp', 33),
  page_down: named('Page_Down', 'PageDown', 'PageDown', 34),
  next: named('Page_Down', 'PageDown', 'PageDown', 34),
  left: named('Left', 'ArrowLeft', 'ArrowLeft', 37),
  up: named('Up', 'ArrowUp', 'ArrowUp', 38),
  right: named('Right', 'ArrowRight', 'ArrowRight', 39),
  down: named('Down', 'ArrowDown', 'ArrowDown', 40),
  space: named('space', ' ', 'Space', 32, { text: ' ' }),
  ...Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`f${i + 1}`, named(`F${i + 1}`, `F${i + 1}`, `F${i + 1}`, 112 + i)])),
};

/** A letter or digit stands for its own key, as in xdotool (`ctrl+t`). */
function characterKey(c: string): Key | undefined {
  if (/^[a-z]$/i.test(c)) return named(c, c, `Key${c.toUpperCase()}`, c.toUpperCase().charCodeAt(0), { text: c });
  if (/^[0-9]$/.test(c)) return named(c, c, `Digit${c}`, c.charCodeAt(0), { text: c });
  return undefined;
}

export function keyByName(name: string): Key | undefined {
  return KEYS[name.toLowerCase()] ?? characterKey(name);
}

/** Resolves key names, or answers 400 naming the field (`hold_keys.1`) of the first unknown one. */
export function resolveKeys(names: readonly string[] | undefined, field: string): Key[] {
  return (names ?? []).map((name, i) => {
    const key = keyByName(name);
    if (!key) throw BadRequestError.field(`${field}.${i}`, `unknown key name ${JSON.stringify(name)}`);
    return key;
  });
}

/** `Ctrl+Shift+Tab`: the keys of one combination, pressed in order and released in reverse. */
export function resolveCombo(combo: string, field: string): Key[] {
  return combo.split('+').map((name) => {
    const key = keyByName(name);
    if (!key) throw BadRequestError.field(field, `unknown key name ${JSON.stringify(name)} in ${JSON.stringify(combo)}`);
    return key;
  });
}

/** The CDP modifiers bitmask of the keys held. */
export function modifierBits(keys: Iterable<Key>): number {
  let bits = 0;
  for (const k of keys) bits |= k.modifier ?? 0;
  return bits;
}
