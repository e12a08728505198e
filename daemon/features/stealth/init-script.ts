/** What the init script is told; the same for every page, frame and worker of a session. */
export interface InitScriptOptions {
  /** What WEBGL_debug_renderer_info reports in place of a software renderer's names. */
  webgl: { vendor: string; renderer: string };
  /** The browser's own high-entropy client hints, which shared and service workers cannot be given over CDP (see below). */
  highEntropy: Record<string, unknown>;
  /** Lets same-origin frames share one registry of disguised functions; unguessable per session. */
  secret: string;
}

/**
 * The JavaScript run in every page, frame and worker of a stealth session before its own scripts:
 * - WebGL: a software renderer's vendor and renderer names (SwiftShader, llvmpipe) are replaced;
 *   a real GPU's are left alone.
 *  * - Shared and service workers: getHighEntropyValues() fills in the hints Chromium leaves empty
 *   there once --user-agent is set (architecture, bitness, fullVersionList, uaFullVersion; pages
 *   and dedicated workers get them from Emulation.setUserAgentOverride instead).
 * - Every replaced function is a Proxy of the original, so its name, length, properties and
 *   errors are the native ones; Function.prototype.toString shows it as native code, and stack
 *   traces of errors thrown through it lose the proxy's frame.
 *
 * Plain JavaScript in a string: a serialized TypeScript function would carry the transpiler's
 * helpers (tsx's __name) into the page.
 */
export function initScript(options: InitScriptOptions): string {
  return `(${SOURCE})(${JSON.stringify(options)});`;
}

const SOURCE = String.raw`function (opts) {
  'use strict';
  const g = globalThis;
  const { apply, defineProperty, getOwnPropertyDescriptor } = Reflect;
  const FunctionPrototype = Function.prototype;
  const nativeToString = FunctionPrototype.toString;
  const then = Promise.prototype.then;
  // Taken before the page's scripts run, which may replace them to watch who calls them.
  const { keys } = Object;
  const { isArray } = Array;
  const { stringify, parse } = JSON;
  const replace = String.prototype.replace;
  // The frame a proxy's trap adds to stack traces: CDP-injected code has no URL.
  const OWN_FRAME = /\n\s+at Object\.apply \(<anonymous>:\d+:\d+\)/g;

  // Replaced function -> the text Function.prototype.toString shows for it. Same-origin frames
  // share their parent's (or opener's) registry, so one frame's toString knows another's patches.
  let fakes;
  for (const w of [g.parent, g.opener]) {
    if (fakes || !w || w === g) continue;
    try {
      const shared = apply(w.Function.prototype.toString, opts.secret, []);
      if (typeof shared === 'object') fakes = shared;
    } catch (err) {
      // Cross-origin, or not patched: this frame keeps a registry of its own.
    }
  }
  fakes = fakes || new WeakMap();

  const clean = (err) => {
    try {
      if (err !== null && typeof err === 'object' && typeof err.stack === 'string') err.stack = apply(replace, err.stack, [OWN_FRAME, '']);
    } catch (e) {
      // A frozen error keeps its stack.
    }
    return err;
  };

  const toStringProxy = new Proxy(nativeToString, {
    apply(target, self, args) {
      if (self === opts.secret) return fakes;
      const fake = fakes.get(self);
      if (fake !== undefined) return fake;
      try {
        return apply(target, self, args);
      } catch (err) {
        throw clean(err);
      }
    },
  });
  fakes.set(toStringProxy, 'function toString() { [native code] }');
  defineProperty(FunctionPrototype, 'toString', { ...getOwnPropertyDescriptor(FunctionPrototype, 'toString'), value: toStringProxy });

  // Replaces proto[name] with a proxy whose result is change(nativeResult, self, args).
  const patchMethod = (proto, name, change) => {
    const d = proto && getOwnPropertyDescriptor(proto, name);
    if (!d || typeof d.value !== 'function') return;
    const fake = new Proxy(d.value, {
      apply(target, self, args) {
        let value;
        try {
          value = apply(target, self, args);
        } catch (err) {
          throw clean(err);
        }
        return change(value, self, args, target);
      },
    });
    fakes.set(fake, 'function ' + name + '() { [native code] }');
    defineProperty(proto, name, { ...d, value: fake });
  };

  const UNMASKED_VENDOR = 0x9245;
  const UNMASKED_RENDERER = 0x9246;
  const SOFTWARE = /SwiftShader|llvmpipe|softpipe|software/i;
  for (const name of ['WebGLRenderingContext', 'WebGL2RenderingContext']) {
    if (typeof g[name] !== 'function') continue;
    patchMethod(g[name].prototype, 'getParameter', (value, self, args, native) => {
      const pname = args[0];
      if (typeof value !== 'string' || (pname !== UNMASKED_VENDOR && pname !== UNMASKED_RENDERER)) return value;
      const renderer = pname === UNMASKED_RENDERER ? value : apply(native, self, [UNMASKED_RENDERER]);
      if (!SOFTWARE.test(renderer)) return value;
      return pname === UNMASKED_VENDOR ? opts.webgl.vendor : opts.webgl.renderer;
    });
  }

  const ownWorker = ['ServiceWorkerGlobalScope', 'SharedWorkerGlobalScope'].some((n) => typeof g[n] === 'function' && g instanceof g[n]);
  if (ownWorker && typeof g.NavigatorUAData === 'function') {
    patchMethod(g.NavigatorUAData.prototype, 'getHighEntropyValues', (promise) =>
      apply(then, promise, [(values) => {
        for (const key of keys(values)) {
          const value = values[key];
          const known = opts.highEntropy[key];
          const empty = value === '' || (isArray(value) && value.length === 0);
          // Parsed again for each call: the page gets objects of its own, as from the native method.
          if (empty && known !== undefined && stringify(known) !== stringify(value)) values[key] = parse(stringify(known));
        }
        return values;
      }]),
    );
  }
}`;
