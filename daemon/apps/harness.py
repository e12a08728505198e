# The child-process side of Python apps, as harness.mjs is for JavaScript ones: loads an app's
# entrypoint and either lists its apps and actions (`list <entrypoint>`) or runs one action
# (`run <entrypoint> <app_name> <action_name>`), with Kernel's own app framework (`kernel.App`).
# Started as `python3 harness.py <mode> ...` with cwd = the app's directory, inside the app's box.
# The answer goes out on fd 3 (RBROWSE_RESULT_FD), so stdout and stderr stay the app's own logs.
import asyncio
import inspect
import json
import os
import runpy
import sys
import traceback

# The harness's own settings, taken out of the environment before the app loads: the app's code and
# what it starts see only the app's variables.
RESULT_FD = os.environ.pop("RBROWSE_RESULT_FD", None)
PAYLOAD = os.environ.pop("RBROWSE_PAYLOAD", None)
INVOCATION_ID = os.environ.pop("RBROWSE_INVOCATION_ID", "")

answered = False


def send(message, code):
    global answered
    # The first answer counts: an error after it is not the action's result.
    if answered:
        return
    answered = True
    sys.stdout.flush()
    sys.stderr.flush()
    line = json.dumps(message) + "\n"
    if RESULT_FD is not None and RESULT_FD.isdigit() and int(RESULT_FD) >= 3:
        fd = int(RESULT_FD)
        data = line.encode()
        while data:
            data = data[os.write(fd, data):]
    else:
        # Started by hand, without the daemon: show the answer instead of losing it.
        sys.stdout.write(line)
        sys.stdout.flush()
    # Exit once the answer is out, even when the app left threads running.
    os._exit(code)


def fail(err, prefix=""):
    message = str(err) or type(err).__name__
    stack = "".join(traceback.format_exception(type(err), err, err.__traceback__)) if isinstance(err, BaseException) else None
    send({"type": "error", "message": prefix + message, **({"stack": stack} if stack else {})}, 1)


def main():
    args = sys.argv[1:]
    mode = args[0] if args else None
    if mode not in ("list", "run") or len(args) < 2 or (mode == "run" and len(args) < 4):
        raise SystemExit("usage: harness.py list <entrypoint> | run <entrypoint> <app_name> <action_name>")
    entrypoint = args[1]
    app_dir = os.getcwd()
    # The app's own modules and packages first, then what the build installed for it; the daemon's
    # copy of Kernel's SDK is last on the path (PYTHONPATH), for an app that brings none.
    entry_dir = os.path.dirname(os.path.join(app_dir, entrypoint))
    sys.path[0:0] = [entry_dir, app_dir, os.path.join(app_dir, ".python_packages")]
    payload = None
    if mode == "run" and PAYLOAD is not None:
        try:
            payload = json.loads(PAYLOAD)
        except ValueError as err:
            return fail(err, "the payload is not JSON: ")
    try:
        # Not as __main__: an entrypoint's `if __name__ == "__main__":` block is for running it by hand.
        runpy.run_path(os.path.join(app_dir, entrypoint), run_name="__kernel_app__")
    except BaseException as err:  # noqa: BLE001 - whatever the app raises at import is its load failure
        return fail(err, "the entrypoint failed to load: ")
    try:
        from kernel.app_framework import KernelContext, app_registry
    except ImportError as err:
        return fail(err, "Kernel's SDK (the kernel package) is not importable: ")
    apps = {app.name: app for app in app_registry.get_apps()}
    if mode == "list":
        listed = [{"name": name, "actions": [{"name": a.name} for a in app.get_actions()]} for name, app in apps.items()]
        return send({"type": "apps", "apps": listed}, 0)
    app_name, action_name = args[2], args[3]
    app = apps.get(app_name)
    if app is None:
        return fail(Exception(f"app {app_name} is not registered by {entrypoint}"))
    action = app.get_action(action_name)
    if action is None:
        names = ", ".join(a.name for a in app.get_actions())
        return fail(Exception(f"action {action_name} not found in app {app_name} (actions: {names})"))
    ctx = KernelContext(invocation_id=INVOCATION_ID)
    try:
        # A handler that takes the context only is called without the payload (the framework's wrapper checks).
        takes_payload = len(inspect.signature(inspect.unwrap(action.handler)).parameters) == 2
        value = action.handler(ctx, payload) if takes_payload else action.handler(ctx)
        if inspect.isawaitable(value):
            value = asyncio.run(_awaited(value))
    except BaseException as err:  # noqa: BLE001 - the action's failure, whatever it is
        return fail(err)
    try:
        output = None if value is None else json.dumps(value)
    except (TypeError, ValueError) as err:
        return fail(err, "the action returned a value that is not JSON: ")
    send({"type": "result", **({"output": output} if output is not None else {})}, 0)


async def _awaited(value):
    return await value


if __name__ == "__main__":
    try:
        main()
    except BaseException as err:  # noqa: BLE001
        fail(err)
