import { Type, type Static } from 'typebox';
import { IdParamsSchema } from './schemas.js';
import type { RouteDef } from './route-def.js';

// Processes inside a session (Kernel's browsers.process): run in the session's namespace, as the
// session's user, ended with the session.

const strict = { additionalProperties: false } as const;
const Base64 = Type.String({ pattern: '^[A-Za-z0-9+/]*={0,2}$', description: 'Base64 (standard alphabet)' });
const Nullable = <T extends ReturnType<typeof Type.String> | ReturnType<typeof Type.Integer>>(t: T) => Type.Optional(Type.Union([t, Type.Null()]));

const ProcessFields = {
  command: Type.String({ minLength: 1, maxLength: 4096, description: 'The program: a name looked up in PATH, or a path inside the session' }),
  args: Type.Optional(Type.Array(Type.String({ maxLength: 131072 }), { maxItems: 4096 })),
  cwd: Nullable(Type.String({ minLength: 1, maxLength: 4096, description: 'Absolute working directory inside the session (default /home/kernel)' })),
  env: Type.Optional(
    Type.Record(Type.String({ pattern: '^[^=\\u0000]+$', maxLength: 1024 }), Type.String({ maxLength: 131072 }), {
      description: 'Added to (and overriding) the session environment',
      additionalProperties: false,
    }),
  ),
  as_root: Type.Optional(Type.Boolean({ description: 'Refused (403): a session is not a VM here; its processes run as the session user' })),
  as_user: Nullable(Type.String({ maxLength: 64, description: 'The session user by name or uid; any other user is refused (403)' })),
  timeout_sec: Nullable(
    Type.Integer({ minimum: 0, maximum: 86_400, description: 'Killed after this many seconds (exit code 124); 0 or null: no limit' }),
  ),
};

export const ProcessExecSchema = Type.Object(ProcessFields, strict);
export type ProcessExecBody = Static<typeof ProcessExecSchema>;

export const ProcessSpawnSchema = Type.Object(
  {
    ...ProcessFields,
    allocate_tty: Type.Optional(Type.Boolean({ description: 'Run on a pseudo-terminal (stdout and stderr merged)' })),
    rows: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
    cols: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
  },
  strict,
);
export type ProcessSpawnBody = Static<typeof ProcessSpawnSchema>;

export const ProcessExecResultSchema = Type.Object({
  exit_code: Type.Integer({ description: '128+N when killed by signal N; 124 when timeout_sec ran out' }),
  stdout_b64: Type.String(),
  stderr_b64: Type.String(),
  duration_ms: Type.Integer(),
});
export type ProcessExecResult = Static<typeof ProcessExecResultSchema>;

export const ProcessSpawnResultSchema = Type.Object({
  process_id: Type.String({ format: 'uuid' }),
  pid: Type.Integer({ description: 'Its process id on the host' }),
  started_at: Type.String({ format: 'date-time' }),
});
export type ProcessSpawnResult = Static<typeof ProcessSpawnResultSchema>;

export const ProcessStatusSchema = Type.Object({
  state: Type.Union([Type.Literal('running'), Type.Literal('exited')]),
  exit_code: Type.Union([Type.Integer(), Type.Null()]),
  cpu_pct: Type.Number({ description: 'CPU time of the process and its children over its lifetime, in percent of one core' }),
  mem_bytes: Type.Integer({ description: 'Resident memory of the process and its children' }),
});
export type ProcessStatus = Static<typeof ProcessStatusSchema>;

export const ProcessParamsSchema = Type.Object({ ...IdParamsSchema.properties, process_id: Type.String({ maxLength: 64 }) });

export const ProcessStdinSchema = Type.Object({ data_b64: Base64 }, strict);
export const ProcessKillSchema = Type.Object(
  { signal: Type.Union([Type.Literal('TERM'), Type.Literal('KILL'), Type.Literal('INT'), Type.Literal('HUP')]) },
  strict,
);
export const ProcessResizeSchema = Type.Object(
  { rows: Type.Integer({ minimum: 1, maximum: 65535 }), cols: Type.Integer({ minimum: 1, maximum: 65535 }) },
  strict,
);
const Ok = Type.Object({ ok: Type.Boolean() });

export const processRoutes = {
  processExec: {
    method: 'POST',
    url: '/browsers/:id/process/exec',
    auth: 'key',
    summary: 'Run a command in the session and wait for it: exit code, output (base64) and duration',
    tag: 'process',
    params: IdParamsSchema,
    body: ProcessExecSchema,
    success: { status: 200, body: ProcessExecResultSchema },
  },
  processSpawn: {
    method: 'POST',
    url: '/browsers/:id/process/spawn',
    auth: 'key',
    summary: 'Start a command in the session in the background (optionally on a pseudo-terminal)',
    tag: 'process',
    params: IdParamsSchema,
    body: ProcessSpawnSchema,
    success: { status: 200, body: ProcessSpawnResultSchema },
  },
  processStatus: {
    method: 'GET',
    url: '/browsers/:id/process/:process_id/status',
    auth: 'key',
    summary: "A spawned process's state, exit code, CPU and memory",
    tag: 'process',
    params: ProcessParamsSchema,
    success: { status: 200, body: ProcessStatusSchema },
  },
  processStdin: {
    method: 'POST',
    url: '/browsers/:id/process/:process_id/stdin',
    auth: 'key',
    summary: "Write to a spawned process's standard input (409 once it has exited)",
    tag: 'process',
    params: ProcessParamsSchema,
    body: ProcessStdinSchema,
    success: { status: 200, body: Type.Object({ written_bytes: Type.Integer() }) },
  },
  processKill: {
    method: 'POST',
    url: '/browsers/:id/process/:process_id/kill',
    auth: 'key',
    summary: 'Send a signal to a spawned process (and its children); ok for one that already exited',
    tag: 'process',
    params: ProcessParamsSchema,
    body: ProcessKillSchema,
    success: { status: 200, body: Ok },
  },
  processResize: {
    method: 'POST',
    url: '/browsers/:id/process/:process_id/resize',
    auth: 'key',
    summary: "Resize a spawned process's pseudo-terminal (400 without one)",
    tag: 'process',
    params: ProcessParamsSchema,
    body: ProcessResizeSchema,
    success: { status: 200, body: Ok },
  },
  processStdoutStream: {
    method: 'GET',
    url: '/browsers/:id/process/:process_id/stdout/stream',
    auth: 'key',
    summary:
      'Output of a spawned process (server-sent events): everything it wrote so far, then live, as `output` events {stream, data_b64}, ending with an `exit` event {exit_code}',
    tag: 'process',
    params: ProcessParamsSchema,
    success: { status: 200, body: null },
    produces: 'text/event-stream',
  },
} as const satisfies Record<string, RouteDef>;
