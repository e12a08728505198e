// The child-process side of apps: loads an app's entrypoint and either lists its apps and actions
// (`list <entrypoint>`) or runs one action (`run <entrypoint> <app_name> <action_name>`).
// Started as `<node24> --import <tsx> harness.mjs <mode> ...` with cwd = the app's directory, inside
// the app's box. The answer goes out on fd 3 (RBROWSE_RESULT_FD), so stdout and stderr stay the
// app's own logs. Plain JavaScript, not compiled: the daemon runs it as it is.
import { writeSync } from 'node:fs';
import module from 'node:module';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const SDK = '@onkernel/sdk';

// The SDK keeps its app registry in a module singleton, and it ships both a CommonJS and an ES
// module build: an app compiled to CommonJS registers in one, an ES module app in the other, and an
// app with its own copy of the SDK in neither of the daemon's. So the copies that count are the ones
// the app itself resolves: a resolve hook (it sees import and require alike) records each of them.
const sdkCopies = new Map();
module.registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    if (specifier === SDK) sdkCopies.set(resolved.url, context.conditions?.includes('import') ? 'import' : 'require');
    return resolved;
  },
});

/**
 * Resolves once everything written to stdout and stderr so far has left the process: a write to
 * a full pipe is queued, process.exit drops the queue, and write callbacks run in order, so an
 * empty write's callback comes after all earlier data.
 */
const flushed = () => Promise.all([process.stdout, process.stderr].map((s) => new Promise((r) => s.write('', r))));

// The harness's own settings, taken out of the environment before the app loads: the app's code
// and what it starts see only the app's variables (and a 128 KiB payload is not inherited).
const RESULT_FD = Number(process.env.RBROWSE_RESULT_FD);
const PAYLOAD = process.env.RBROWSE_PAYLOAD;
const INVOCATION_ID = process.env.RBROWSE_INVOCATION_ID ?? '';
for (const name of ['RBROWSE_RESULT_FD', 'RBROWSE_PAYLOAD', 'RBROWSE_INVOCATION_ID']) delete process.env[name];

let answered = false;
function send(message, code) {
  // The first answer counts: an error the app throws after it is not the action's result.
  if (answered) return;
  answered = true;
  const resultFd = RESULT_FD;
  void flushed().then(() => {
    if (!Number.isInteger(resultFd) || resultFd < 3) {
      // Started by hand, without the daemon: show the answer instead of losing it.
      process.stdout.write(`${JSON.stringify(message)}\n`, () => process.exit(code));
      return;
    }
    // Exit once the answer is out, even when the app left timers or sockets open.
    writeSync(resultFd, `${JSON.stringify(message)}\n`);
    process.exit(code);
  });
}

function fail(err, prefix = '') {
  const message = err instanceof Error ? err.message : String(err);
  send({ type: 'error', message: `${prefix}${message}`, ...(err instanceof Error && err.stack ? { stack: err.stack } : {}) }, 1);
}

/** The registries of the SDK copies the app loaded, plus the one it would resolve (for an app that loaded none). */
async function registries(appDir) {
  const appRequire = createRequire(join(appDir, 'package.json'));
  if (sdkCopies.size === 0) {
    try {
      sdkCopies.set(pathToFileURL(appRequire.resolve(SDK)).href, 'require');
    } catch {
      return [];
    }
  }
  const found = [];
  for (const [url, kind] of sdkCopies) {
    const mod = kind === 'import' ? await import(url) : appRequire(fileURLToPath(url));
    const registry = mod.appRegistry ?? mod.default?.appRegistry;
    if (registry) found.push(registry);
  }
  return found;
}

/** Every registered app by name, merged across the SDK copies. */
async function appsByName(appDir) {
  const apps = new Map();
  for (const registry of await registries(appDir)) {
    for (const app of registry.getApps()) {
      const actions = apps.get(app.name) ?? new Map();
      for (const action of app.getActions()) actions.set(action.name, action);
      apps.set(app.name, actions);
    }
  }
  return apps;
}

async function main() {
  const [mode, entrypoint, appName, actionName] = process.argv.slice(2);
  if ((mode !== 'list' && mode !== 'run') || !entrypoint || (mode === 'run' && (!appName || !actionName))) {
    throw new Error('usage: harness.mjs list <entrypoint> | run <entrypoint> <app_name> <action_name>');
  }
  const appDir = process.cwd();
  let payload;
  if (mode === 'run' && PAYLOAD !== undefined) {
    try {
      payload = JSON.parse(PAYLOAD);
    } catch (err) {
      return fail(err, 'the payload is not JSON: ');
    }
  }
  try {
    await import(pathToFileURL(resolve(appDir, entrypoint)).href);
  } catch (err) {
    return fail(err, 'the entrypoint failed to load: ');
  }
  const apps = await appsByName(appDir);
  if (mode === 'list') {
    const list = [...apps].map(([name, actions]) => ({ name, actions: [...actions.keys()].map((n) => ({ name: n })) }));
    return send({ type: 'apps', apps: list }, 0);
  }
  const actions = apps.get(appName);
  if (!actions) return fail(new Error(`app ${appName} is not registered by ${entrypoint}`));
  const action = actions.get(actionName);
  if (!action) return fail(new Error(`action ${actionName} not found in app ${appName} (actions: ${[...actions.keys()].join(', ')})`));
  let value;
  try {
    value = await action.handler({ invocation_id: INVOCATION_ID }, payload);
  } catch (err) {
    return fail(err);
  }
  let output;
  try {
    output = value === undefined ? undefined : JSON.stringify(value);
  } catch (err) {
    return fail(err, 'the action returned a value that is not JSON: ');
  }
  send({ type: 'result', output }, 0);
}

// An error the app throws outside the awaited chain (a timer, an event handler) still ends the
// child with an answer rather than a bare exit code.
process.on('uncaughtException', (err) => fail(err));
process.on('unhandledRejection', (err) => fail(err));
main().catch((err) => fail(err));
