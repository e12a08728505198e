import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type {
  CreateOtlpDestinationBody,
  ListOtlpDestinationsQuery,
  OtlpDestination,
  UpdateOtlpDestinationBody,
} from '../../../src/api/telemetry-destinations.js';
import { BadRequestError, ConflictError } from '../../../src/errors.js';
import { newId } from '../../../src/ids.js';
import { assertNameFree, findByIdOrName, type OrgRecord } from '../../lib/owned-records.js';
import { paginate, type ListPage } from '../../lib/paging.js';
import type { Store } from '../../lib/state/store.js';

/** An OTLP destination; its header values are kept apart, 0600 (never in state.json, never answered). */
export interface OtlpDestinationRecord {
  id: string;
  org_id: string;
  name: string;
  endpoint: string;
  description?: string;
  header_names: string[];
  created_at: string;
  updated_at: string;
}

declare module '../../lib/state/store.js' {
  interface State {
    telemetry_destinations: OtlpDestinationRecord[];
  }
}

/** Kernel's limit on a destination's header names and values together. */
const MAX_HEADER_BYTES = 8192;
const SIGNAL_PATH = /\/v1\/(logs|traces|metrics)\/?$/;
const ID_SHAPE = /^[a-z][0-9a-z]{23}$/;

/**
 * OTLP/HTTP collectors a session's telemetry can be exported to (telemetry.export.otlp). Kernel
 * requires a public address; here a collector on this machine or the LAN is the common case, so
 * any http or https endpoint is taken.
 */
/** What exports to the destinations: asked before a delete, told of a changed endpoint. */
export interface DestinationUsers {
  /** The sessions exporting to a destination now (a destination in use is not deleted). */
  exportingTo(destinationId: string): string[];
  /** A destination's endpoint changed: sessions exporting to it move there. */
  endpointChanged(destinationId: string): Promise<void>;
}

export class TelemetryDestinations {
  private readonly dir: string;
  /** Header values by destination, as written: read by every export, so a PATCH applies at once. */
  private readonly headers = new Map<string, Record<string, string>>();
  /** The sessions' exports, built on this: which sessions export where, and moving them. */
  private exports?: DestinationUsers;

  constructor(
    private readonly deps: {
      store: Store;
      /** The daemon's credentials directory; header values go to its `telemetry-destinations/`. */
      credentialsDir: string;
    },
  ) {
    deps.store.collection('telemetry_destinations');
    this.dir = join(deps.credentialsDir, 'telemetry-destinations');
  }
  /** The sessions' telemetry, built on these destinations, says so as it is built. */
  exportedBy(users: DestinationUsers): void {
    this.exports = users;
  }

  async create(org: OrgRecord, body: CreateOtlpDestinationBody): Promise<OtlpDestination> {
    const name = checkedName(body.name);
    assertNameFree(this.records, org, name, 'telemetry destination');
    const headers = canonicalHeaders(body.headers ?? {});
    const now = new Date().toISOString();
    const record: OtlpDestinationRecord = {
      id: newId(),
      org_id: org.id,
      name,
      endpoint: checkedEndpoint(body.endpoint),
      ...(body.description !== undefined ? { description: body.description } : {}),
      header_names: Object.keys(headers),
      created_at: now,
      updated_at: now,
    };
    await this.writeHeaders(record.id, headers);
    await this.deps.store.update((s) => void s.telemetry_destinations.push(record));
    return view(record);
  }

  list(org: OrgRecord, q: ListOtlpDestinationsQuery): ListPage<OtlpDestination> {
    const name = q.name?.trim();
    const text = q.query?.toLowerCase();
    const matches = this.records.filter(
      (d) =>
        d.org_id === org.id &&
        (!name || d.name.localeCompare(name, undefined, { sensitivity: 'base' }) === 0) &&
        (!text || d.id === q.query || [d.name, d.endpoint].some((v) => v.toLowerCase().includes(text))),
    );
    return paginate(matches, q, view);
  }

  get(org: OrgRecord, idOrName: string): OtlpDestination {
    return view(this.find(org, idOrName));
  }

  byId(id: string): OtlpDestinationRecord | undefined {
    return this.records.find((d) => d.id === id);
  }

  find(org: OrgRecord, idOrName: string): OtlpDestinationRecord {
    return findByIdOrName(this.records, org, idOrName, 'telemetry destination');
  }

  async update(org: OrgRecord, idOrName: string, body: UpdateOtlpDestinationBody): Promise<OtlpDestination> {
    const record = this.find(org, idOrName);
    const name = body.name === undefined ? undefined : checkedName(body.name);
    if (name !== undefined && name !== record.name) assertNameFree(this.records, org, name, 'telemetry destination');
    const endpoint = body.endpoint === undefined ? undefined : checkedEndpoint(body.endpoint);
    if (body.headers) {
      const next = { ...(await this.headersOf(record.id)) };
      const edits = Object.entries(body.headers).map(([k, v]) => [canonicalName(k), v] as const);
      if (new Set(edits.map(([k]) => k)).size !== edits.length) throw BadRequestError.field('headers', 'names one header twice');
      for (const [k, v] of edits) {
        if (v === null) delete next[k];
        else next[k] = v;
      }
      checkSize(next);
      await this.writeHeaders(record.id, next);
    }
    await this.deps.store.update(() => {
      if (name !== undefined) record.name = name;
      if (endpoint !== undefined) record.endpoint = endpoint;
      if (body.description !== undefined) record.description = body.description;
      if (body.headers) record.header_names = Object.keys(this.headers.get(record.id) ?? {});
      record.updated_at = new Date().toISOString();
    });
    if (endpoint !== undefined) await this.exports?.endpointChanged(record.id);
    return view(record);
  }

  async delete(org: OrgRecord, idOrName: string): Promise<void> {
    const record = this.find(org, idOrName);
    const users = this.exports?.exportingTo(record.id) ?? [];
    if (users.length)
      throw new ConflictError(
        `telemetry destination ${idOrName} is in use by live session(s) ${users.join(', ')}; end them or stop their export first`,
      );
    await this.deps.store.update((s) => void (s.telemetry_destinations = s.telemetry_destinations.filter((d) => d !== record)));
    this.headers.delete(record.id);
    await rm(join(this.dir, record.id), { force: true });
  }

  /** A destination's header values now (an export reads them each time). */
  async headersOf(id: string): Promise<Record<string, string>> {
    let headers = this.headers.get(id);
    if (!headers) {
      headers = JSON.parse(await readFile(join(this.dir, id), 'utf8').catch(() => '{}')) as Record<string, string>;
      this.headers.set(id, headers);
    }
    return headers;
  }

  private get records(): OtlpDestinationRecord[] {
    return this.deps.store.data.telemetry_destinations;
  }

  private async writeHeaders(id: string, headers: Record<string, string>): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    await writeFile(join(this.dir, id), JSON.stringify(headers), { mode: 0o600 });
    this.headers.set(id, headers);
  }
}

function view(record: OtlpDestinationRecord): OtlpDestination {
  return {
    id: record.id,
    name: record.name,
    endpoint: record.endpoint,
    headers: Object.fromEntries(record.header_names.map((n) => [n, ''])),
    ...(record.description !== undefined ? { description: record.description } : {}),
    created_at: record.created_at,
    updated_at: record.updated_at,
  };
}

function checkedName(name: string): string {
  const trimmed = name.trim();
  if (ID_SHAPE.test(trimmed)) throw BadRequestError.field('name', 'cannot be shaped like an id (it is usable in place of one)');
  return trimmed;
}

/** http or https, no query or fragment, no signal path (the exporter adds /v1/logs). */
function checkedEndpoint(endpoint: string): string {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw BadRequestError.field('endpoint', 'is not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw BadRequestError.field('endpoint', 'must be http or https');
  if (url.search || url.hash) throw BadRequestError.field('endpoint', 'must carry no query string or fragment');
  if (url.username || url.password) throw BadRequestError.field('endpoint', 'must carry no credentials (send them as headers)');
  if (SIGNAL_PATH.test(url.pathname)) throw BadRequestError.field('endpoint', 'must not end in a signal path such as /v1/logs: it is added');
  return url.href.replace(/\/$/, '');
}

/** `x-api-key` -> `X-Api-Key`, as Kernel stores and answers header names. */
function canonicalName(name: string): string {
  return name
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1).toLowerCase())
    .join('-');
}

function canonicalHeaders(given: Record<string, string>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(given)) {
    const name = canonicalName(k);
    if (name in headers) throw BadRequestError.field('headers', `names ${name} twice (names are case-insensitive)`);
    headers[name] = v;
  }
  checkSize(headers);
  return headers;
}

function checkSize(headers: Record<string, string>): void {
  const bytes = Object.entries(headers).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0);
  if (bytes > MAX_HEADER_BYTES) throw BadRequestError.field('headers', `names and values together exceed ${MAX_HEADER_BYTES} bytes`);
}
