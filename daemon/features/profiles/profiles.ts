import { open, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pipeline, type Readable } from 'node:stream';
import { createZstdCompress } from 'node:zlib';
import type { CreateProfileBody, DownloadProfileQuery, ListProfilesQuery, Profile, UpdateProfileBody } from '../../../src/api/profiles.js';
import type { CreateBrowserBody, UpdateBrowserBody } from '../../../src/api/browsers.js';
import { BadRequestError, ConflictError, NotFoundError, ServiceUnavailableError } from '../../../src/errors.js';
import { newId } from '../../../src/ids.js';
import { removeTree } from '../../lib/fs-util.js';
import type { StorageQuotas } from '../../org/storage.js';
import type { Scope } from '../../org/projects.js';
import { assertNameFree, findByIdOrName } from '../../lib/owned-records.js';
import { paginate, type ListPage } from '../../lib/paging.js';
import type { FeatureLaunch, LaunchContext, SessionFeature } from '../../sessions/features.js';
import { USER_DATA_DIR } from '../../sessions/live-session.js';
import { FileOps } from '../../box/box-files.js';
import type { Boxes } from '../../box/boxes.js';
import type { OrgRecord } from '../../lib/owned-records.js';
import type { SessionRecord } from '../../sessions/record.js';
import type { Store } from '../../lib/state/store.js';
import { isLeftoverTemp, packUserData, unpackUserData } from './archive.js';
import { ProfileLeases } from './leases.js';

export interface ProfileRecord {
  id: string;
  org_id: string;
  name?: string;
  created_at: string;
  /** The last save of user data (or rename). */
  updated_at?: string;
  /** The last time a session loaded it. */
  last_used_at?: string;
}

declare module '../../lib/state/store.js' {
  interface State {
    profiles: ProfileRecord[];
  }
}

/** A download: the archive's bytes, and how to name and type them. */
export interface ProfileDownload {
  stream: Readable;
  filename: string;
  contentType: string;
}

type Selection = NonNullable<CreateBrowserBody['profile']>;

const toApi = ({ org_id: _org, ...profile }: ProfileRecord): Profile => profile;

/** How long a failing save waits before each next try. */
const SAVE_RETRY_MS = [1000, 2000, 5000, 10_000, 30_000, 60_000];

const label = (p: { id?: string; name?: string }) => JSON.stringify(p.name ?? p.id);

/**
 * Saved browser user data (cookies, storage, preferences), one tar archive per profile in
 * `dir/<id>/data.tar`. A session loads it into its user-data-dir before Chromium starts; with
 * save_changes, the browser's user data is written back once it has closed.
 */
export class Profiles implements SessionFeature {
  private readonly leases = new ProfileLeases();

  private readonly savedListeners: ((orgId: string, profileId: string) => void)[] = [];

  /** Room admitted for the saves of sessions being deleted, given back once each is written. */
  private readonly admittedSaves = new Map<string, () => void>();

  constructor(private readonly deps: { store: Store; dir: string; log: (msg: string, extra?: object) => void; storage?: StorageQuotas }) {
    deps.store.collection('profiles');
    deps.storage?.register('profiles', {
      paths: (owners) => deps.store.data.profiles.filter((p) => owners.has(p.org_id)).map((p) => this.profileDir(p.id)),
      count: (owners) => deps.store.data.profiles.filter((p) => owners.has(p.org_id)).length,
    });
  }

  /** Called after a session's user data was written back to a profile (pools refresh their idle browsers on it). */
  onSaved(listener: (orgId: string, profileId: string) => void): void {
    this.savedListeners.push(listener);
  }

  /**
   * A session whose profile saves is deleted only when its save has room (its user data's size, on
   * the organization's quota and above the disk's reserve): else the DELETE is refused and the
   * session lives on, its changes unsaved but not lost.
   */
  async checkDelete(org: OrgRecord, record: SessionRecord, files: FileOps): Promise<void> {
    if (!record.profile?.save_changes || !this.deps.storage) return;
    const bytes = await files.usage(USER_DATA_DIR).catch(() => 0);
    const release = await this.deps.storage.admit(org as Scope, bytes, `the save of profile ${record.profile.id}`);
    this.admittedSaves.get(record.id)?.();
    this.admittedSaves.set(record.id, release);
  }

  async create(org: OrgRecord, body: CreateProfileBody): Promise<Profile> {
    this.deps.storage?.assertRoomFor(org as Scope, 'profiles');
    const now = new Date().toISOString();
    const record: ProfileRecord = {
      id: newId(),
      org_id: org.id,
      ...(body.name !== undefined ? { name: body.name } : {}),
      created_at: now,
      updated_at: now,
    };
    // The check runs inside the synchronous change, so two creates of one name cannot both pass.
    await this.deps.store.update((s) => {
      if (body.name !== undefined) this.assertNameFree(org, body.name);
      s.profiles.push(record);
    });
    return toApi(record);
  }

  /** The profile of this name, made if the organization has none (managed auth makes the profile it is given). */
  async ensure(org: OrgRecord, name: string): Promise<void> {
    await this.deps.store.update((s) => {
      if (s.profiles.some((p) => p.org_id === org.id && p.name === name)) return;
      const now = new Date().toISOString();
      s.profiles.push({ id: newId(), org_id: org.id, name, created_at: now, updated_at: now });
    });
  }

  list(org: OrgRecord, q: ListProfilesQuery): ListPage<Profile> {
    const needle = q.query?.toLowerCase();
    const matches = this.deps.store.data.profiles.filter(
      (p) =>
        p.org_id === org.id &&
        (q.name === undefined || p.name === q.name) &&
        (!needle || p.id.includes(needle) || (p.name ?? '').toLowerCase().includes(needle)),
    );
    return paginate(matches, q, toApi);
  }

  get(org: OrgRecord, idOrName: string): Profile {
    return toApi(this.find(org, idOrName));
  }

  async update(org: OrgRecord, idOrName: string, body: UpdateProfileBody): Promise<Profile> {
    const record = this.find(org, idOrName);
    await this.deps.store.update(() => {
      if (body.name !== record.name) this.assertNameFree(org, body.name);
      record.name = body.name;
      record.updated_at = new Date().toISOString();
    });
    return toApi(record);
  }

  /** Refused (409) while any session, launching or live, uses the profile; 503 while its last save fails and is tried again. */
  async delete(org: OrgRecord, idOrName: string): Promise<void> {
    // Sessions that ended but are still saving it are waited for, not counted as users.
    await this.leases.saved(this.find(org, idOrName).id);
    const record = this.find(org, idOrName);
    this.assertSaved(record);
    const users = this.leases.sessionsOf(record.id);
    if (users.length) {
      throw new ConflictError(
        `profile ${label(record)} is in use by live session${users.length > 1 ? 's' : ''} ${users.join(', ')}; end ${users.length > 1 ? 'them' : 'it'} first`,
      );
    }
    // The files first: on a full disk the state write may fail, and the space is free all the same.
    await removeTree(this.profileDir(record.id), this.deps.log);
    await this.deps.store.update((s) => {
      s.profiles = s.profiles.filter((p) => p !== record);
    });
  }

  /** The saved archive, or null while nothing has been saved (the route answers 202). */
  async download(org: OrgRecord, idOrName: string, format: DownloadProfileQuery['format']): Promise<ProfileDownload | null> {
    // A session that ended a moment ago may still be saving it: the download is what it saved.
    await this.leases.saved(this.find(org, idOrName).id);
    const record = this.find(org, idOrName);
    // Opened once: a save renaming a new archive into place meanwhile does not cut this one short.
    const handle = await open(this.archive(record.id), 'r').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return null;
      throw err;
    });
    if (!handle) {
      this.find(org, idOrName); // deleted meanwhile: 404 rather than "nothing saved"
      return null;
    }
    const tarStream = handle.createReadStream();
    const filename = `${record.name ?? record.id}.${format ?? 'tar'}`;
    if (format !== 'tar.zst') return { stream: tarStream, filename, contentType: 'application/x-tar' };
    const zstd = createZstdCompress();
    pipeline(tarStream, zstd, (err) => err && this.deps.log('profile download failed', { profile: record.id, error: String(err) }));
    return { stream: zstd, filename, contentType: 'application/zstd' };
  }

  // --- SessionFeature ---

  check(org: OrgRecord, body: CreateBrowserBody): void {
    if (body.profile) this.selected(org, body.profile);
  }

  needsLaunch(body: CreateBrowserBody): boolean {
    return body.profile !== undefined;
  }

  async launch(ctx: LaunchContext): Promise<FeatureLaunch | undefined> {
    return ctx.body.profile && this.load(ctx, ctx.body.profile);
  }

  checkUpdate(org: OrgRecord, record: SessionRecord, body: UpdateBrowserBody): void {
    if (!body.profile) return;
    if (!body.profile.id && !body.profile.name) throw BadRequestError.field('profile', 'provide id or name');
    if (record.profile) throw new ConflictError('this session already has a profile loaded; a profile can only be added to a session without one');
    this.selected(org, body.profile);
  }

  needsRestart(body: UpdateBrowserBody): boolean {
    return body.profile !== undefined;
  }

  /** PATCH profile: the session's browser, stopped, gets the profile's user data in place of its own. */
  async restart(ctx: Omit<LaunchContext, 'body'>, body: UpdateBrowserBody): Promise<FeatureLaunch | undefined> {
    return body.profile && this.load(ctx, body.profile, true);
  }

  /** Loads a profile's user data into a session's (emptied first with `replace`), holding the profile's lease. */
  private async load(ctx: Omit<LaunchContext, 'body'>, selection: Selection, replace = false): Promise<FeatureLaunch> {
    // A session that ended a moment ago may still be saving this profile: load what it wrote.
    await this.leases.saved(this.selected(ctx.org, selection).id);
    const profile = this.selected(ctx.org, selection);
    this.assertSaved(profile);
    const save = selection.save_changes === true;
    // Taken before anything else is awaited: the single-writer rule holds against concurrent creates.
    const { release, ending } = this.leases.take(profile.id, ctx.record.id, save, label(profile));
    try {
      // Inside the box, as its user: the session's code may have run there (a PATCH), and
      // whatever it left at /home/kernel/user-data is removed and written as the session would.
      try {
        if (replace) {
          await ctx.files.deleteDirectory(USER_DATA_DIR);
          await ctx.files.createDirectory(USER_DATA_DIR, '700');
        }
        await unpackUserData(this.archive(profile.id), ctx.files, USER_DATA_DIR);
      } catch (err) {
        // The session's own processes run on during a restart in place: one that moves or
        // links its user data between these steps has raced itself, and nothing is missing.
        if (replace && (err instanceof NotFoundError || err instanceof ConflictError)) {
          throw new ConflictError(`${USER_DATA_DIR} changed while the profile was loaded (a process of the session moved it); try again`);
        }
        throw err;
      }
      await this.deps.store.update(() => void (profile.last_used_at = new Date().toISOString()));
    } catch (err) {
      release();
      throw err;
    }
    const session = ctx.record;
    session.profile = { id: profile.id, save_changes: save };
    const files = ctx.files;
    return {
      release,
      stopping: ending,
      ...(save ? { closed: ({ graceful, giveUp }) => this.saveUntilDone(session, files, graceful, giveUp) } : {}),
    };
  }

  view(record: SessionRecord): { profile?: Profile; profile_save_changes?: boolean } {
    const profile = record.profile && this.deps.store.data.profiles.find((p) => p.id === record.profile!.id);
    return profile ? { profile: toApi(profile), profile_save_changes: record.profile!.save_changes } : {};
  }

  searchTerms(record: SessionRecord): string[] {
    const profile = record.profile && this.deps.store.data.profiles.find((p) => p.id === record.profile!.id);
    return profile ? [profile.id, ...(profile.name ? [profile.name] : [])] : [];
  }

  /**
   * At start, after a crashed daemon's boxes have ended (their agents closed each browser as on a
   * normal end): each orphaned session that held a profile with save_changes has its user data
   * saved from the disk its box left, read in a box of its own with the session's uids, as if it
   * had ended normally; half-written archives and the files of deleted profiles go.
   */
  async recover(o: { orphans: SessionRecord[]; boxes: Boxes }): Promise<void> {
    await this.sweep();
    const disks = new Set(await o.boxes.leftoverDisks());
    await Promise.all(
      // One whose save completed before the crash is left alone: its disk may be half removed.
      o.orphans
        .filter((s) => s.profile?.save_changes && !s.profile.saved_at && disks.has(s.id))
        .map(async (s) => {
          try {
            const box = await o.boxes.start({ kind: 'session', id: s.id, reuseDisk: true, slot: s.runtime?.uid_slot });
            try {
              await this.saveBack(s, new FileOps(box), true, true);
            } finally {
              await box.stop({ keepDisk: true });
            }
          } catch (err) {
            this.deps.log('orphaned profile not saved', { session: s.id, profile: s.profile!.id, error: String(err) });
          }
        }),
    );
  }

  /** Refuses (503) what needs a profile saved (a load, a delete) while its last session's save fails and is tried again. */
  private assertSaved(profile: ProfileRecord): void {
    const failure = this.leases.failure(profile.id);
    if (!failure) return;
    throw new ServiceUnavailableError(
      `profile ${label(profile)} is not saved yet: its last session's save failed (${failure}) and is tried again; try again later`,
    );
  }

  /**
   * saveBack, tried again while it fails (a disk that filled after the DELETE's check, the
   * profiles' directory unwritable): the session's disk, with its user data, is kept meanwhile,
   * and loads of the profile are refused (503) rather than given it without the session's changes.
   * At daemon stop it gives up, keeping the disk: the next start saves it.
   */
  private async saveUntilDone(
    session: SessionRecord,
    files: FileOps,
    graceful: boolean,
    giveUp: AbortSignal,
  ): Promise<{ keepDisk: true } | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.saveBack(session, files, graceful);
        return undefined;
      } catch (err) {
        const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
        this.leases.failing(session.profile!.id, reason);
        const waitMs = SAVE_RETRY_MS[Math.min(attempt, SAVE_RETRY_MS.length - 1)]!;
        this.deps.log('profile save failed; trying again', { profile: session.profile!.id, session: session.id, error: String(err), in_ms: waitMs });
        const waited = await sleep(waitMs, true, { signal: giveUp }).catch(() => false);
        if (!waited) {
          this.deps.log('profile save left for the next start', { profile: session.profile!.id, session: session.id });
          return { keepDisk: true };
        }
      }
    }
  }

  /** Writes a session's user data back to its profile (packed inside its box), and records on both that it did. */
  private async saveBack(session: SessionRecord, files: FileOps, graceful: boolean, orphaned = false): Promise<void> {
    const lease = session.profile!;
    const record = this.deps.store.data.profiles.find((p) => p.id === lease.id);
    if (!record) return;
    const started = Date.now();
    const admitted = this.admittedSaves.get(session.id);
    this.admittedSaves.delete(session.id);
    // Saved even when the browser had to be killed: Chromium's stores survive a crash, and
    // losing the whole session's changes would be worse than its last few seconds.
    try {
      if (!(await packUserData(files, USER_DATA_DIR, this.archive(record.id)))) return;
    } finally {
      admitted?.();
    }
    await this.deps.store.update(() => {
      record.updated_at = lease.saved_at = new Date().toISOString();
    });
    this.deps.log('profile saved', { profile: record.id, session: session.id, graceful, orphaned, ms: Date.now() - started });
    for (const listener of this.savedListeners) listener(record.org_id, record.id);
  }

  private async sweep(): Promise<void> {
    const known = new Set(this.deps.store.data.profiles.map((p) => p.id));
    for (const id of await readdir(this.deps.dir).catch(() => [] as string[])) {
      if (!known.has(id)) {
        await removeTree(this.profileDir(id), this.deps.log);
        continue;
      }
      for (const file of (await readdir(this.profileDir(id)).catch(() => [] as string[])).filter(isLeftoverTemp)) {
        await removeTree(join(this.profileDir(id), file), this.deps.log);
      }
    }
  }

  /** The profile a create body names (by id, name or both): 404 when the org has none such. */
  /** The id a selection names today, if the profile still exists (a pool's resolved profile_id). */
  resolvedId(org: OrgRecord, s: Selection): string | undefined {
    try {
      return this.selected(org, s).id;
    } catch {
      return undefined;
    }
  }

  private selected(org: OrgRecord, s: Selection): ProfileRecord {
    const found = this.deps.store.data.profiles.find(
      (p) => p.org_id === org.id && (s.id === undefined || p.id === s.id) && (s.name === undefined || p.name === s.name),
    );
    if (!found) {
      const what = s.id !== undefined && s.name !== undefined ? `with id "${s.id}" and name "${s.name}"` : label(s);
      throw new NotFoundError(`profile ${what} not found; create it first with POST /profiles`);
    }
    return found;
  }

  private find(org: OrgRecord, idOrName: string): ProfileRecord {
    return findByIdOrName(this.deps.store.data.profiles, org, idOrName, 'profile');
  }

  private assertNameFree(org: OrgRecord, name: string): void {
    assertNameFree(this.deps.store.data.profiles, org, name, 'a profile');
  }

  private profileDir(id: string): string {
    return join(this.deps.dir, id);
  }

  private archive(id: string): string {
    return join(this.profileDir(id), 'data.tar');
  }
}
