import { ApiError, BadRequestError, NotFoundError } from '../../../src/errors.js';

/** Google's update service, which answers a store extension's CRX; RBROWSE_CHROME_STORE_URL replaces it (tests, mirrors). */
const UPDATE_URL = 'https://clients2.google.com/service/update2/crx';
/** The service hands out only what a browser this recent may install. */
const PROD_VERSION = '156.0.0.0';
const FETCH_TIMEOUT_MS = 60_000;

const CRX_MAGIC = 'Cr24';
const ZIP_MAGIC = Buffer.from([0x50, 0x4b, 0x03, 0x04]);

/** A store URL (chromewebstore.google.com/detail/<slug>/<id>, the old chrome.google.com/webstore one) or a bare id. */
export function storeExtensionId(url: string): string {
  const id = /(?:^|\/)([a-p]{32})(?:[/?#]|$)/.exec(url.trim())?.[1];
  if (!id) throw BadRequestError.field('url', 'not a Chrome Web Store extension URL (…/detail/<name>/<32-letter id>) or id');
  return id;
}

/**
 * Fetches an extension from the Chrome Web Store and answers the zip inside its CRX: what
 * POST /extensions takes. An unreachable store is a 502 (nothing here can fix it).
 */
export async function fetchFromChromeStore(o: { url: string; os: string; maxBytes: number }): Promise<Buffer> {
  const id = storeExtensionId(o.url);
  const source = new URL(process.env.RBROWSE_CHROME_STORE_URL || UPDATE_URL);
  for (const [k, v] of Object.entries({ response: 'redirect', acceptformat: 'crx3', prodversion: PROD_VERSION, os: o.os, arch: 'x64' })) {
    source.searchParams.set(k, v);
  }
  source.searchParams.set('x', `id=${id}&installsource=ondemand&uc`);
  let res: Response;
  try {
    res = await fetch(source, { redirect: 'follow', signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  } catch (err) {
    throw new ApiError(502, 'bad_gateway', `the Chrome Web Store could not be reached: ${(err as Error).cause ?? (err as Error).message}`);
  }
  // The service answers 204 (or 404) for an id it does not know.
  if (res.status === 204 || res.status === 404) throw new NotFoundError(`extension ${id} is not in the Chrome Web Store`);
  if (!res.ok || !res.body) throw new ApiError(502, 'bad_gateway', `the Chrome Web Store answered ${res.status} for extension ${id}`);
  return crxZip(await readCapped(res.body, o.maxBytes, id), id);
}

async function readCapped(body: ReadableStream<Uint8Array>, maxBytes: number, id: string): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > maxBytes) throw new BadRequestError(`extension ${id} is larger than ${maxBytes / 1024 ** 2} MiB`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** The zip a CRX carries after its header (CRX3: a protobuf header; CRX2: a key and a signature). */
export function crxZip(crx: Buffer, id: string): Buffer {
  const bad = () => new ApiError(502, 'bad_gateway', `the Chrome Web Store's answer for extension ${id} is not a CRX package`);
  if (crx.length < 16 || crx.toString('latin1', 0, 4) !== CRX_MAGIC) throw bad();
  const version = crx.readUInt32LE(4);
  const start = version === 3 ? 12 + crx.readUInt32LE(8) : version === 2 ? 16 + crx.readUInt32LE(8) + crx.readUInt32LE(12) : -1;
  if (start < 0 || start + 4 > crx.length || !crx.subarray(start, start + 4).equals(ZIP_MAGIC)) throw bad();
  return crx.subarray(start);
}
