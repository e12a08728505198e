import { existsSync, readdirSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp, open, rename } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { Multipart } from '@fastify/multipart';
import { ExtensionFormSchema, type Extension, type ExtensionForm, type ListExtensionsQuery } from '../../../src/api/extensions.js';
import type { CreateBrowserBody } from '../../../src/api/browsers.js';
import { NotFoundError } from '../../../src/errors.js';
import { assertNameFree, findByIdOrName } from '../../lib/owned-records.js';
import { newId } from '../../../src/ids.js';
import { receiveZipForm } from '../../lib/archive/receive-zip.js';
import { lazyValidator } from '../../lib/validators.js';
import { extractZip, type UnzipLimits } from '../../lib/archive/unzip.js';
import { removeTree } from '../../lib/fs-util.js';
import type { StorageQuotas } from '../../org/storage.js';
import type { Scope } from '../../org/projects.js';
import { paginate, type ListPage } from '../../lib/paging.js';
import type { FeatureLaunch, LaunchContext, SessionFeature } from '../../sessions/features.js';
import type { OrgRecord } from '../../lib/owned-records.js';
import type { Store } from '../../lib/state/store.js';
import { BOX_USER } from '../../box/box-spec.js';

/** Where a session's extensions are, inside its box: <dir>/<extension id or name>. */
export const SESSION_EXTENSIONS_DIR = `${BOX_USER.home}/extensions`;
import { tarOf } from '../../lib/archive/tar-stream.js';
import { extensionsLaunch } from './loaded.js';
import { defaultName, readManifest } from './manifest.js';

export interface ExtensionRecord {
  id: string;
  org_id: string;
  name?: string;
  created_at: string;
  size_bytes: number;
  checksum: string;
  last_used_at?: string;
  /** Kept to explain a refusal: Chromium 139 and later no longer load manifest_version 2. */
  manifest_version: 2 | 3;
}

declare module '../../lib/state/store.js' {
  interface State {
    extensions: ExtensionRecord[];
  }
}

/** The zip as uploaded, served back by download. */
const ARCHIVE = 'extension.zip';
/** The extension's root (the directory holding manifest.json), copied into each session using it. */
const UNPACKED = 'unpacked';
/** Uploads are written below the extensions directory first, so the final rename stays on one filesystem. */
const UPLOAD_PREFIX = '.upload-';

export const MAX_UPLOAD_BYTES = 100 * 1024 ** 2;
export const UNZIP_LIMITS: UnzipLimits = { maxBytes: 256 * 1024 ** 2, maxEntries: 10_000, maxRatio: 200 };
const validateExtensionForm = lazyValidator<ExtensionForm>(ExtensionFormSchema);

type Selection = NonNullable<CreateBrowserBody['extensions']>[number];

const toApi = (r: ExtensionRecord): Extension => ({
  id: r.id,
  name: r.name ?? null,
  created_at: r.created_at,
  size_bytes: r.size_bytes,
  checksum: r.checksum,
  last_used_at: r.last_used_at ?? null,
});
const label = (e: { id?: string; name?: string }) =>
  e.id !== undefined && e.name !== undefined ? `with id "${e.id}" and name "${e.name}"` : JSON.stringify(e.name ?? e.id);

/**
 * Uploaded unpacked extensions, one directory per extension in `dir/<id>/` (the zip as uploaded,
 * and the extension's root unpacked). A session naming some gets its own copies in
 * /home/kernel/extensions/<id>, loaded with --load-extension, so deleting an extension never
 * touches a running session.
 */
export class Extensions implements SessionFeature {
  constructor(private readonly deps: { store: Store; dir: string; log: (msg: string, extra?: object) => void; storage?: StorageQuotas }) {
    deps.store.collection('extensions');
    this.sweep();
    deps.storage?.register('extensions', {
      paths: (owners) => deps.store.data.extensions.filter((e) => owners.has(e.org_id)).map((e) => this.extensionDir(e.id)),
      count: (owners) => deps.store.data.extensions.filter((e) => owners.has(e.org_id)).length,
    });
  }

  /**
   * POST /extensions: the zip streams to a scratch directory, is extracted (extractZip refuses
   * zip-slip, links and bombs), its manifest checked, and the whole directory renamed into place;
   * on any refusal the scratch directory goes and nothing is left written.
   */
  async upload(org: OrgRecord, parts: AsyncIterable<Multipart>): Promise<Extension> {
    // The organization's room on the disk bounds the zip and its unpacking as their bytes come.
    this.deps.storage?.assertRoomFor(org as Scope, 'extensions');
    const room = await this.deps.storage?.roomFor(org as Scope, 'the extension');
    await mkdir(this.deps.dir, { recursive: true, mode: 0o700 });
    const work = await mkdtemp(join(this.deps.dir, UPLOAD_PREFIX));
    try {
      const { form, checksum, size } = await receiveZipForm(parts, join(work, ARCHIVE), {
        maxBytes: MAX_UPLOAD_BYTES,
        fileField: 'file',
        validate: validateExtensionForm,
        what: 'a zip of the unpacked extension',
        ...(room ? { room } : {}),
      });
      // Checked now to spare the extraction; checked again where the record is stored.
      if (form.name !== undefined) this.assertNameFree(org, form.name);
      const extracted = join(work, 'extracted');
      await extractZip(
        join(work, ARCHIVE),
        extracted,
        'file',
        room ? { ...UNZIP_LIMITS, room: { bytes: room.bytes - size, refusal: room.refusal } } : UNZIP_LIMITS,
      );
      const found = await readManifest(extracted);
      const fallbackName = form.name === undefined ? await defaultName(found) : undefined;
      await rename(found.root, join(work, UNPACKED));
      await removeTree(extracted);
      const record: ExtensionRecord = {
        id: newId(),
        org_id: org.id,
        created_at: new Date().toISOString(),
        size_bytes: size,
        checksum,
        manifest_version: found.manifest.manifest_version,
      };
      const final = this.extensionDir(record.id);
      await rename(work, final);
      try {
        // Synchronous check and insert: two uploads of one name cannot both pass.
        await this.deps.store.update((s) => {
          if (form.name !== undefined) this.assertNameFree(org, form.name);
          const name = form.name ?? (fallbackName && !this.named(org, fallbackName) ? fallbackName : undefined);
          if (name !== undefined) record.name = name;
          s.extensions.push(record);
        });
      } catch (err) {
        await removeTree(final, this.deps.log);
        throw err;
      }
      this.deps.log('extension uploaded', { extension: record.id, name: record.name, bytes: size });
      return toApi(record);
    } finally {
      await removeTree(work, this.deps.log);
    }
  }

  list(org: OrgRecord, q: ListExtensionsQuery): ListPage<Extension> {
    const needle = q.query?.toLowerCase();
    const matches = this.deps.store.data.extensions.filter(
      (e) =>
        e.org_id === org.id &&
        (q.name === undefined || e.name === q.name) &&
        (!needle || e.id === q.query || (e.name ?? '').toLowerCase().includes(needle)),
    );
    return paginate(matches.toReversed(), q, toApi);
  }

  get(org: OrgRecord, idOrName: string): Extension {
    return toApi(this.find(org, idOrName));
  }

  /** The uploaded zip; opened before it is answered, so a delete meanwhile cannot cut it short. */
  async download(org: OrgRecord, idOrName: string): Promise<{ stream: Readable; size: number; filename: string }> {
    const record = this.find(org, idOrName);
    const handle = await open(join(this.extensionDir(record.id), ARCHIVE), 'r').catch(() => {
      throw new NotFoundError(`extension ${JSON.stringify(idOrName)} not found`);
    });
    const { size } = await handle.stat().catch(async (err: unknown) => {
      await handle.close();
      throw err;
    });
    return { stream: handle.createReadStream(), size, filename: `${record.name ?? record.id}.zip` };
  }

  /** Sessions that loaded it keep their copies; pools naming it fail their next launches with 404. */
  async delete(org: OrgRecord, idOrName: string): Promise<void> {
    const record = this.find(org, idOrName);
    // The files first: on a full disk the state write may fail, and the space is free all the same
    // (a record left without its files goes on the next try).
    await removeTree(this.extensionDir(record.id), this.deps.log);
    await this.deps.store.update((s) => {
      s.extensions = s.extensions.filter((e) => e !== record);
    });
  }

  // --- SessionFeature ---

  check(org: OrgRecord, body: CreateBrowserBody): void {
    this.selected(org, body.extensions ?? []);
  }

  needsLaunch(body: CreateBrowserBody): boolean {
    return (body.extensions?.length ?? 0) > 0;
  }

  async launch(ctx: LaunchContext): Promise<FeatureLaunch | undefined> {
    const selected = this.selected(ctx.org, ctx.body.extensions ?? []);
    if (selected.length === 0) return undefined;
    const loaded = [];
    for (const { record, index } of selected) {
      const source = join(this.extensionDir(record.id), UNPACKED);
      if (!existsSync(source)) throw new NotFoundError(`extensions.${index}: extension ${label(record)} was deleted`);
      // A copy in the session's box, written there as its user.
      const path = `${SESSION_EXTENSIONS_DIR}/${record.id}`;
      await ctx.files.unpack(path, await tarOf(source));
      loaded.push({ record, index, path });
    }
    const now = new Date().toISOString();
    await this.deps.store.update(() => selected.forEach(({ record }) => void (record.last_used_at = now)));
    return extensionsLaunch(
      loaded.map(({ record, index, path }) => ({
        path,
        field: `extensions.${index}`,
        label: `extension ${label(record)}`,
        manifestVersion: record.manifest_version,
      })),
      this.deps.log,
    );
  }

  /** The ids the selections name today, in load order, leaving out deleted ones (a pool's extension_ids). */
  resolvedIds(org: OrgRecord, selections: Selection[]): string[] {
    return selections.flatMap((s) => {
      try {
        return this.selected(org, [s]).map(({ record }) => record.id);
      } catch {
        return [];
      }
    });
  }

  /** The org's extensions a create body names, each once, with the index it was first named at: 404 for any missing. */
  private selected(org: OrgRecord, selections: Selection[]): { record: ExtensionRecord; index: number }[] {
    const out = new Map<string, { record: ExtensionRecord; index: number }>();
    selections.forEach((s, index) => {
      const record = this.deps.store.data.extensions.find(
        (e) => e.org_id === org.id && (s.id === undefined || e.id === s.id) && (s.name === undefined || e.name === s.name),
      );
      if (!record) throw new NotFoundError(`extensions.${index}: extension ${label(s)} not found; upload it first with POST /extensions`);
      if (!out.has(record.id)) out.set(record.id, { record, index });
    });
    return [...out.values()];
  }

  private find(org: OrgRecord, idOrName: string): ExtensionRecord {
    return findByIdOrName(this.deps.store.data.extensions, org, idOrName, 'extension');
  }

  private named(org: OrgRecord, name: string): boolean {
    return this.deps.store.data.extensions.some((e) => e.org_id === org.id && e.name === name);
  }

  private assertNameFree(org: OrgRecord, name: string): void {
    assertNameFree(this.deps.store.data.extensions, org, name, 'an extension');
  }

  private extensionDir(id: string): string {
    return join(this.deps.dir, id);
  }

  /**
   * At start: what a crash left between an upload's rename and its record, or a delete's record
   * and its files, goes. Synchronous, so no upload can be under way while it looks.
   */
  private sweep(): void {
    const known = new Set(this.deps.store.data.extensions.map((e) => e.id));
    let entries: string[];
    try {
      entries = readdirSync(this.deps.dir);
    } catch {
      return;
    }
    for (const entry of entries.filter((e) => !known.has(e))) {
      try {
        rmSync(join(this.deps.dir, entry), { recursive: true, force: true });
      } catch (err) {
        this.deps.log('could not remove extension leftover', { entry, error: String(err) });
      }
    }
  }
}
