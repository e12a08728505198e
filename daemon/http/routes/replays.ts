import { createReadStream } from 'node:fs';
import type { FastifyReply } from 'fastify';
import type { ReplayRecorder } from '../../features/replays/recorder.js';
import type { SessionManager } from '../../sessions/manager.js';
import type { HandlerGroup } from '../handlers.js';

type ReplayOps = 'listReplays' | 'startReplay' | 'stopReplay' | 'downloadReplay' | 'viewReplay';

function mp4(reply: FastifyReply, file: { path: string; size: number }) {
  reply.header('content-length', file.size);
  return createReadStream(file.path);
}

/** Replays outlive their session: list, stop and download find an ended session of the org too. */
export function replayHandlers(sessions: SessionManager, replays: ReplayRecorder): HandlerGroup<ReplayOps> {
  const sessionId = async (org: Parameters<SessionManager['get']>[0], id: string) => (await sessions.get(org, id, true)).session_id;
  return {
    listReplays: async ({ org, params }) => replays.list(await sessionId(org, params.id)),
    startReplay: ({ org, params, body }) => sessions.withSession(org, params.id, (s) => replays.start(s, body)),
    stopReplay: async ({ org, params }) => replays.stop(await sessionId(org, params.id), params.replay_id),
    downloadReplay: async ({ org, params, reply }) => mp4(reply, await replays.file(await sessionId(org, params.id), params.replay_id)),
    viewReplay: async ({ params, query, reply }) => mp4(reply, await replays.viewable(query.jwt, params.replay_id)),
  };
}
