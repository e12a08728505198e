import type { DiscoveredField } from '../../src/api/auth-connections.js';
import type { PageSend } from '../browser/cdp-page.js';

/** What a look at the page found: its address, whether it has loaded, the login form's fields and a visible error. */
export interface PageScan {
  url: string;
  ready: boolean;
  fields: DiscoveredField[];
  /** A message the site shows about the last attempt (role=alert, or an element named error/invalid). */
  error: string | null;
}

/**
 * Runs in the page: the inputs of the login form as Kernel's discovered_fields. A login form is
 * one with a password or one-time-code input, or an identifier input (user, email, login) on its
 * own, as identifier-first logins ask for it; search boxes and newsletters are left out. Only
 * inputs a person could see and type into count.
 */
const SCAN = `(() => {
  const visible = (el) => {
    const r = el.getBoundingClientRect(); const s = getComputedStyle(el);
    return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none' && !el.disabled && !el.readOnly;
  };
  const text = (el) => (el && el.textContent || '').replace(/\\s+/g, ' ').trim();
  const codeLike = /one-time|otp|totp|2fa|mfa|verification|passcode|security.?code|auth.?code|^code$/i;
  const idLike = /user|email|login|identifier|account|phone/i;
  const kindOf = (el) => {
    const t = (el.getAttribute('type') || 'text').toLowerCase();
    const hints = [el.name, el.id, el.autocomplete, el.getAttribute('aria-label'), el.placeholder].join(' ');
    if (t === 'password') return 'password';
    if (el.autocomplete === 'one-time-code' || codeLike.test(hints)) return /totp|authenticator/i.test(hints) ? 'totp' : 'code';
    if (['email', 'tel', 'number', 'url'].includes(t)) return t;
    if (t === 'text' || t === 'search' || !el.getAttribute('type')) return t === 'search' ? null : 'text';
    return null;
  };
  const selectorOf = (el) => {
    if (el.id && document.querySelectorAll('#' + CSS.escape(el.id)).length === 1) return '#' + CSS.escape(el.id);
    if (el.name) {
      const s = el.tagName.toLowerCase() + '[name="' + CSS.escape(el.name) + '"]';
      if (document.querySelectorAll(s).length === 1) return s;
    }
    const path = [];
    for (let n = el; n && n.nodeType === 1 && n !== document.documentElement; n = n.parentElement) {
      const same = n.parentElement ? [...n.parentElement.children].filter((c) => c.tagName === n.tagName) : [];
      path.unshift(n.tagName.toLowerCase() + (same.length > 1 ? ':nth-of-type(' + (same.indexOf(n) + 1) + ')' : ''));
    }
    return path.join(' > ');
  };
  const labelOf = (el) => {
    const byFor = el.id && document.querySelector('label[for="' + CSS.escape(el.id) + '"]');
    return text(byFor) || text(el.closest('label')) || el.getAttribute('aria-label') || el.placeholder || el.name || el.id || '';
  };
  const inputs = [...document.querySelectorAll('input, textarea')].filter((el) => visible(el) && kindOf(el));
  const groups = new Map();
  for (const el of inputs) {
    const key = el.form || document.body;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(el);
  }
  let login = [];
  for (const group of groups.values()) {
    const kinds = group.map(kindOf);
    const secret = kinds.some((k) => k === 'password' || k === 'code' || k === 'totp');
    const identifier = group.length <= 2 && group.some((el) => idLike.test([el.name, el.id, el.autocomplete, el.type].join(' ')));
    if (secret || identifier) { login = group; break; }
  }
  const used = new Set();
  const fields = login.map((el, i) => {
    let name = el.name || el.id || kindOf(el) + (i ? '_' + i : '');
    while (used.has(name)) name += '_' + i;
    used.add(name);
    const f = { name, label: labelOf(el), selector: selectorOf(el), type: kindOf(el), required: el.required };
    if (el.placeholder) f.placeholder = el.placeholder;
    // The help text the site ties to the field (aria-describedby: "we sent a code to ***-42"), else its title.
    const described = (el.getAttribute('aria-describedby') || '').split(/\\s+/).filter(Boolean)
      .map((id) => text(document.getElementById(id))).filter(Boolean).join(' ');
    const hint = (described || el.title || '').slice(0, 300);
    if (hint) f.hint = hint;
    return f;
  });
  const alerts = [...document.querySelectorAll('[role=alert], [aria-live=assertive], .error, .alert-error, .invalid-feedback, [id*=error i], [class*=error i]')]
    .filter((el) => visible(el) && text(el) && text(el).length < 300);
  return { url: location.href, ready: document.readyState === 'complete', fields, error: alerts.length ? text(alerts[0]) : null };
})()`;

export async function scanPage(send: PageSend): Promise<PageScan> {
  const { result, exceptionDetails } = await send('Runtime.evaluate', { expression: SCAN, returnByValue: true });
  if (exceptionDetails) throw new Error(`the login page could not be read: ${exceptionDetails.text}`);
  return result.value as PageScan;
}

/**
 * Types each value into its input as a person would (focus, select what is there, insert the
 * text: trusted input events, which sites that check them accept), then submits the form the way
 * its own button would.
 */
export async function fillAndSubmit(send: PageSend, entries: { selector: string; value: string }[]): Promise<void> {
  for (const { selector, value } of entries) {
    if (value === '') continue; // an optional field left as it is
    const { result } = await send('Runtime.evaluate', {
      expression: `(() => { const el = document.querySelector(${JSON.stringify(selector)}); if (!el) return false; el.focus(); el.select?.(); return true; })()`,
      returnByValue: true,
    });
    if (!result.value) throw new Error(`the field ${selector} is gone from the page`);
    await send('Input.insertText', { text: value });
  }
  const last = entries.at(-1)?.selector;
  if (!last) return;
  await send('Runtime.evaluate', {
    expression: `(() => {
      const el = document.querySelector(${JSON.stringify(last)}); const form = el && el.form;
      if (!form) { el && el.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true })); return; }
      const button = form.querySelector('button:not([type]), button[type=submit], input[type=submit]');
      if (button) button.click(); else form.requestSubmit();
    })()`,
  });
}
