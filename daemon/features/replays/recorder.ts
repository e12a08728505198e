import type { StorageQuotas } from '../../org/storage.js';
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Box, BoxProcess } from '../../box/box.js';
import { boxEnv } from '../../box/box-env.js';
import type { Replay, ReplayStartBody } from '../../../src/api/replays.js';
import { ApiError, BadRequestError, ConflictError, NotFoundError, ServiceUnavailableError } from '../../../src/errors.js';
import { newId } from '../../../src/ids.js';
import { CdpClient } from '../../browser/cdp-client.js';
import type { FeatureLaunch, LaunchContext, SessionFeature } from '../../sessions/features.js';
import type { LiveSession } from '../../sessions/live-session.js';
import type { SessionTokens } from '../../sessions/tokens.js';

const DEFAULT_FRAMERATE = 10;
/** How long ffmpeg may take to open its input and write the file's head. */
const START_MS = 10_000;
/** A screencast's ffmpeg that still runs after this has taken its input. */
const SCREENCAST_SETTLE_MS = 500;

/** The largest fragment of a recording's file: how far past -fs it may grow. */
const FRAGMENT_BYTES = 256 * 1024;

export interface ReplayRecorderDeps {
  /** Where replays are kept: one directory per session, outside the session's own (which goes when it ends). */
  dir: string;
  publicUrl: () => string;
  tokens: SessionTokens;
  /** The size cap of one replay (ffmpeg's -fs). */
  maxMegabytes: number;
  log: (msg: string, extra?: object) => void;
  storage?: StorageQuotas;
}

interface ReplayRecord {
  replay_id: string;
  session_id: string;
  org_id: string;
  /** The session's creation: its replay token is signed as of then, so it is derived, never stored. */
  session_created_at: string;
  started_at: string;
  finished_at: string | null;
}

interface Recording {
  record: ReplayRecord;
  /** ffmpeg, inside the session's box: what it encodes comes out on its stdout into the part file. */
  ffmpeg: BoxProcess;
  /** Resolves once ffmpeg has exited and its output is all in the part file; its last error line. */
  finished: Promise<{ error: string }>;
  /** The session's box, for the remux at the end (gone once the session has ended). */
  box: Box;
  /** Ends the input: `q` to x11grab, the end of the frames for a headless screencast. */
  endInput: () => void;
  /** Resolves once the mp4 is final and its record says so. */
  done: Promise<void>;
}

/**
 * Replays (Kernel's browsers.replays): a session's screen recorded to mp4 by ffmpeg, one recording
 * at a time per session, several in its life. ffmpeg runs inside the session's box, as its user
 * (what it decodes comes from the session: its screen, its browser's frames), and writes to its
 * stdout, which the daemon keeps in a file of its own. Headful: x11grab of the session's display.
 * Headless (no peer records those): CDP screencast frames piped into ffmpeg, timed by the wall
 * clock. The output is a fragmented mp4 (readable even if ffmpeg is killed), remuxed with the
 * index first (faststart), in the box too, when the recording stops. Replays stay after the
 * session ends, readable through its id, until the daemon's history forgets the session. A
 * session's end stops its recording.
 */
export class ReplayRecorder implements SessionFeature {
  private readonly recordings = new Map<string, Recording>();
  private readonly starting = new Set<string>();

  constructor(private readonly deps: ReplayRecorderDeps) {}

  /** Every session may record: its end finishes what it was recording. */
  async launch(ctx: LaunchContext): Promise<FeatureLaunch> {
    return { closed: () => this.finishRecording(ctx.record.id) };
  }

  handOver(ctx: LaunchContext): Promise<FeatureLaunch> {
    return this.launch(ctx);
  }

  async start(session: LiveSession, body: ReplayStartBody): Promise<Replay> {
    if (body.record_audio) throw BadRequestError.field('record_audio', 'sessions have no audio here');
    if (this.recordings.has(session.id) || this.starting.has(session.id)) {
      throw new ConflictError(`session ${session.id} is already recording (stop that replay first)`);
    }
    // Held from here, through the awaits below, so two starts at once cannot both begin.
    this.starting.add(session.id);
    try {
      return await this.begin(session, body);
    } catch (err) {
      if (err instanceof ApiError) throw err;
      // The browser refusing its screencast is the session's condition, not a fault of the daemon.
      throw new ServiceUnavailableError(`the recording could not start: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      this.starting.delete(session.id);
    }
  }

  private async begin(session: LiveSession, body: ReplayStartBody): Promise<Replay> {
    // A recording grows as it runs: it starts only while the organization has room (it is bounded by maxMegabytes).
    const storage = this.deps.storage;
    if (storage) (await storage.admit(storage.orgOf(session.record.org_id), 0, 'a recording'))();
    const framerate = body.framerate ?? DEFAULT_FRAMERATE;
    const record: ReplayRecord = {
      replay_id: newId(),
      session_id: session.id,
      org_id: session.record.org_id,
      session_created_at: session.record.created_at,
      started_at: new Date().toISOString(),
      finished_at: null,
    };
    const dir = join(this.deps.dir, session.id);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const part = join(dir, `${record.replay_id}.part.mp4`);
    const output = [
      '-c:v',
      'libx264',
      '-preset',
      'ultrafast',
      '-pix_fmt',
      'yuv420p',
      // Fragments also flush at FRAGMENT_BYTES: -fs is checked as the file grows, so a busy
      // screen (megabytes a second) cannot overshoot by a whole 2-second fragment; the limit
      // leaves room for the last fragment and the final index, so the mp4 stays within the cap.
      '-movflags',
      '+frag_keyframe+empty_moov',
      '-frag_duration',
      '2000000',
      '-frag_size',
      String(FRAGMENT_BYTES),
      '-fs',
      String(Math.max(this.deps.maxMegabytes * 1024 ** 2 - 2 * FRAGMENT_BYTES, (this.deps.maxMegabytes * 1024 ** 2) / 2)),
      ...(body.max_duration_in_seconds ? ['-t', String(body.max_duration_in_seconds)] : []),
      '-f',
      'mp4',
      'pipe:1',
    ];
    let recording: Recording;
    if (session.display) {
      const { width, height } = session.record.viewport;
      const ffmpeg = this.ffmpeg(
        session,
        [
          '-f',
          'x11grab',
          '-framerate',
          String(framerate),
          '-video_size',
          `${width}x${height}`,
          '-draw_mouse',
          '1',
          '-i',
          `:${session.display.number}`,
          ...output,
        ],
        part,
      );
      recording = { record, ...ffmpeg, box: session.box, endInput: () => void ffmpeg.ffmpeg.stdin?.end('q'), done: Promise.resolve() };
    } else {
      recording = await this.screencast(session, record, framerate, output, part);
    }
    recording.done = this.afterExit(recording, part);
    this.recordings.set(session.id, recording);
    await this.writeRecord(record);
    await this.started(recording, part, !session.display);
    return this.toApi(record);
  }

  /** Stops a session's recording; resolves once its mp4 is final. */
  async stop(sessionId: string, replayId: string): Promise<void> {
    const recording = this.recordings.get(sessionId);
    if (!recording || recording.record.replay_id !== replayId) {
      await this.readRecord(sessionId, replayId); // 404 for an unknown one
      throw new ConflictError(`replay ${replayId} is not recording`);
    }
    recording.endInput();
    await recording.done;
  }

  /** The replays of a session, oldest first (its own directory, so also once the session ended). */
  async list(sessionId: string): Promise<Replay[]> {
    const dir = join(this.deps.dir, sessionId);
    const names = await readdir(dir).catch(() => [] as string[]);
    const records = await Promise.all(names.filter((n) => n.endsWith('.json')).map((n) => this.readRecord(sessionId, n.slice(0, -5))));
    records.sort((a, b) => a.started_at.localeCompare(b.started_at));
    return Promise.all(records.map((r) => this.toApi(r)));
  }

  /** The finished mp4 of a replay. */
  async file(sessionId: string, replayId: string): Promise<{ path: string; size: number }> {
    const record = await this.readRecord(sessionId, replayId);
    if (!record.finished_at) throw new ConflictError(`replay ${replayId} is still recording`);
    const path = join(this.deps.dir, sessionId, `${replayId}.mp4`);
    const info = await stat(path).catch(() => null);
    if (!info) throw new NotFoundError(`replay ${replayId} has no video (the recording produced none)`);
    return { path, size: info.size };
  }

  /** The replay a replay_view_url names, checked against its jwt's session. */
  async viewable(jwt: string | undefined, replayId: string): Promise<{ path: string; size: number }> {
    const session = await this.deps.tokens.verify(jwt, 'replay');
    if (!session) throw new NotFoundError(`replay ${replayId} not found`);
    return this.file(session.id, replayId);
  }

  /** Removes the replays of sessions whose newest replay is older than maxAgeMs (the history's retention). */
  async prune(maxAgeMs: number): Promise<void> {
    const sessions = await readdir(this.deps.dir).catch(() => [] as string[]);
    for (const id of sessions) {
      if (this.recordings.has(id)) continue;
      const dir = join(this.deps.dir, id);
      const files = await readdir(dir).catch(() => [] as string[]);
      const times = await Promise.all(
        files.map((f) =>
          stat(join(dir, f)).then(
            (s) => s.mtimeMs,
            () => 0,
          ),
        ),
      );
      if (Math.max(0, ...times) < Date.now() - maxAgeMs) await rm(dir, { recursive: true, force: true });
    }
  }

  /** Daemon stop: every recording is finished. */
  async close(): Promise<void> {
    await Promise.all([...this.recordings.keys()].map((id) => this.finishRecording(id)));
  }

  private async finishRecording(sessionId: string): Promise<void> {
    const recording = this.recordings.get(sessionId);
    if (!recording) return;
    recording.endInput();
    await recording.done;
  }

  /** ffmpeg in the session's box, its stdout kept in `part` on the daemon's side. */
  private ffmpeg(session: LiveSession, args: string[], part: string): { ffmpeg: BoxProcess; finished: Promise<{ error: string }> } {
    const ffmpeg = session.box.spawn(['ffmpeg', '-hide_banner', '-loglevel', 'error', '-nostats', ...args], {
      env: boxEnv(session.display?.number),
      stdin: 'pipe',
    });
    ffmpeg.stdin!.on('error', () => {});
    let error = '';
    ffmpeg.stderr!.on('data', (d: Buffer) => (error = (error + d.toString()).slice(-2000)));
    const written = pipeline(ffmpeg.stdout!, createWriteStream(part, { mode: 0o600 })).catch((err: Error) => void (error ||= err.message));
    const finished = Promise.all([ffmpeg.exited, written]).then(() => ({ error: error.trim().split('\n').pop() ?? '' }));
    return { ffmpeg, finished };
  }

  /**
   * Headless: the screencast of the session's first page, each frame acknowledged and handed to
   * ffmpeg as JPEG; ffmpeg stamps them with the wall clock and repeats them to the frame rate.
   */
  private async screencast(session: LiveSession, record: ReplayRecord, framerate: number, output: string[], part: string): Promise<Recording> {
    const { width, height } = session.record.viewport;
    const { ffmpeg, finished } = this.ffmpeg(
      session,
      [
        '-f',
        'image2pipe',
        '-c:v',
        'mjpeg',
        '-use_wallclock_as_timestamps',
        '1',
        '-i',
        '-',
        // The frames are the page, under the window's (invisible) browser UI: they sit at the bottom of
        // a screen of the viewport's size, as in a headful recording.
        '-vf',
        `fps=${framerate},scale=w='min(iw,${width})':h='min(ih,${height})',pad=${width}:${height}:0:oh-ih`,
        ...output,
      ],
      part,
    );
    const cdp = await CdpClient.connect(session.chromium);
    const { targetInfos } = (await cdp.send('Target.getTargets')) as { targetInfos: { targetId: string; type: string }[] };
    const page = targetInfos.find((t) => t.type === 'page');
    if (!page) {
      cdp.close();
      ffmpeg.kill('SIGKILL');
      await finished;
      throw new ConflictError(`session ${session.id} has no page to record`);
    }
    const { sessionId } = await cdp.send('Target.attachToTarget', { targetId: page.targetId, flatten: true });
    cdp.on('Page.screencastFrame', (p: { data: string; sessionId: number }, from) => {
      if (from !== sessionId) return;
      void cdp.send('Page.screencastFrameAck', { sessionId: p.sessionId }, sessionId).catch(() => {});
      if (ffmpeg.stdin?.writable) ffmpeg.stdin.write(Buffer.from(p.data, 'base64'));
    });
    // The screencast sends frames only when something changes: a screenshot opens the video (a
    // still page is recorded too) and another closes it, so it lasts until the stop.
    const still = async () => {
      const { data } = (await cdp.send('Page.captureScreenshot', { format: 'jpeg', quality: 80 }, sessionId)) as { data: string };
      if (ffmpeg.stdin?.writable) ffmpeg.stdin.write(Buffer.from(data, 'base64'));
    };
    await still();
    await cdp.send('Page.startScreencast', { format: 'jpeg', quality: 80, maxWidth: width, maxHeight: height }, sessionId);
    let ending = false;
    const endInput = () => {
      if (ending) return;
      ending = true;
      void still()
        .catch(() => {})
        .finally(() => {
          cdp.close();
          ffmpeg.stdin?.end();
        });
    };

    // A session that ends takes the page along: the frames end, and so does the recording.
    void ffmpeg.exited.then(() => cdp.close());
    return { record, ffmpeg, finished, box: session.box, endInput, done: Promise.resolve() };
  }

  /**
   * Resolves once ffmpeg has written the file's head (x11grab: at once), or is still running a
   * moment on (a screencast, whose encoder holds its first frames back); its early exit is the
   * start's failure.
   */
  private async started(recording: Recording, part: string, screencast: boolean): Promise<void> {
    const deadline = Date.now() + (screencast ? SCREENCAST_SETTLE_MS : START_MS);
    while (Date.now() < deadline) {
      if (recording.record.finished_at) break;
      if (existsSync(part) && (await stat(part)).size > 0) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    if (screencast && !recording.record.finished_at) return;
    const result = await Promise.race([recording.finished, new Promise<null>((r) => setTimeout(() => r(null), 10))]);
    const why = result ? result.error : 'no output in time';
    recording.endInput();
    await recording.done;
    throw new ServiceUnavailableError(`the recording could not start: ${why || 'ffmpeg exited'}`);
  }

  /** When ffmpeg ends: the fragmented file becomes the final mp4 (index first), and the record says it finished. */
  private async afterExit(recording: Recording, part: string): Promise<void> {
    const { record } = recording;
    // ffmpeg's -t and -fs end it; this only guards against one that hangs.
    const killer = setTimeout(() => recording.ffmpeg.kill('SIGKILL'), 4 * 3600_000 + 60_000).unref();
    await recording.finished;
    clearTimeout(killer);
    const final = join(this.deps.dir, record.session_id, `${record.replay_id}.mp4`);
    if (existsSync(part)) {
      const size = (await stat(part)).size;
      const remuxed = size > 0 && (await remux(recording.box, part, final).catch(() => false));
      if (remuxed) await unlink(part).catch(() => {});
      // A fragmented mp4 plays too: kept as it is when the remux fails (the session gone meanwhile).
      else if (size > 0) await rename(part, final).catch(() => {});
      else await unlink(part).catch(() => {});
    }
    record.finished_at = new Date().toISOString();
    await this.writeRecord(record).catch((err: unknown) => this.deps.log('replay record not written', { error: String(err) }));
    if (this.recordings.get(record.session_id) === recording) this.recordings.delete(record.session_id);
  }

  private async toApi(r: ReplayRecord): Promise<Replay> {
    const jwt = await this.deps.tokens.sign(r.session_id, r.org_id, 'replay', new Date(r.session_created_at));
    return {
      replay_id: r.replay_id,
      started_at: r.started_at,
      finished_at: r.finished_at,
      replay_view_url: `${this.deps.publicUrl()}/browser/replays/${r.replay_id}?jwt=${jwt}`,
    };
  }

  private async writeRecord(r: ReplayRecord): Promise<void> {
    const path = join(this.deps.dir, r.session_id, `${r.replay_id}.json`);
    await writeFile(`${path}.tmp`, JSON.stringify(r), { mode: 0o600 });
    await rename(`${path}.tmp`, path);
  }

  private async readRecord(sessionId: string, replayId: string): Promise<ReplayRecord> {
    if (!/^[a-z0-9]{1,64}$/.test(replayId)) throw new NotFoundError(`replay ${replayId} not found`);
    const text = await readFile(join(this.deps.dir, sessionId, `${replayId}.json`), 'utf8').catch(() => null);
    if (!text) throw new NotFoundError(`replay ${replayId} not found`);
    return JSON.parse(text) as ReplayRecord;
  }
}

/**
 * The fragmented recording with its index first (faststart), made by ffmpeg in the session's box
 * (never by the daemon: the file is the session's making): the part goes in on stdin, the result
 * is written to the box's /tmp (faststart seeks in its output), then comes back on stdout.
 */
async function remux(box: Box, part: string, final: string): Promise<boolean> {
  if (box.isStopped) return false;
  const temp = `/tmp/.rbrowse-remux-${Date.now()}.mp4`;
  const child = box.spawn(
    [
      'sh',
      '-c',
      'ffmpeg -hide_banner -loglevel error -f mp4 -i pipe:0 -c copy -movflags +faststart -f mp4 -y "$1" && cat -- "$1"; s=$?; rm -f -- "$1"; exit $s',
      'remux',
      temp,
    ],
    { env: boxEnv(), stdin: 'pipe' },
  );
  const partial = `${final}.${process.pid}.tmp`;
  try {
    await Promise.all([pipeline(createReadStream(part), child.stdin!), pipeline(child.stdout!, createWriteStream(partial, { mode: 0o600 }))]);
    const { code } = await child.exited;
    if (code !== 0 || (await stat(partial)).size === 0) throw new Error(`remux failed (${code})`);
    await rename(partial, final);
    return true;
  } catch {
    child.kill('SIGKILL');
    await rm(partial, { force: true });
    return false;
  }
}
