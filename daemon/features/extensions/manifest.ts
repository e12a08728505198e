import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Type, type Static } from 'typebox';
import { EXTENSION_NAME_PATTERN } from '../../../src/api/extensions.js';
import { BadRequestError } from '../../../src/errors.js';
import { validationDetails } from '../../lib/validation-details.js';
import { lazyValidator } from '../../lib/validators.js';

/**
 * What Chromium itself insists on before it loads an unpacked extension. Version: one to four
 * dot-separated integers without leading zeros (Chromium's rule; its 65535 cap is left to it).
 */
const ManifestSchema = Type.Object(
  {
    manifest_version: Type.Union([Type.Literal(2), Type.Literal(3)]),
    name: Type.String({ minLength: 1, maxLength: 1000 }),
    version: Type.String({ pattern: '^(0|[1-9][0-9]{0,4})(\\.(0|[1-9][0-9]{0,4})){0,3}$' }),
    default_locale: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]+$' })),
  },
  { additionalProperties: true },
);
export type Manifest = Static<typeof ManifestSchema>;

const validateManifest = lazyValidator<Manifest>(ManifestSchema);

const MAX_MANIFEST_BYTES = 1024 ** 2;
/** Finder puts this beside the folder it zips; it is never the extension. */
const MAC_RESOURCE_FORK = '__MACOSX';

const refuse = (why: string) => BadRequestError.field('file', why);

export interface FoundManifest {
  /** The directory holding manifest.json: the extension's root. */
  root: string;
  manifest: Manifest;
}

/**
 * Finds and checks the manifest of an extracted upload. manifest.json may sit at the zip's root
 * or inside its single top-level folder (what zipping the folder itself gives).
 */
export async function readManifest(extracted: string): Promise<FoundManifest> {
  const root = await extensionRoot(extracted);
  const file = join(root, 'manifest.json');
  if ((await stat(file)).size > MAX_MANIFEST_BYTES) throw refuse('manifest.json is larger than 1 MiB');
  let parsed: unknown;
  try {
    parsed = await readJson(file);
  } catch (err) {
    throw refuse(`manifest.json is not valid JSON: ${(err as Error).message}`);
  }
  if (!validateManifest(parsed)) {
    const problems = validationDetails(validateManifest.errors ?? [], 'manifest.json').map((d) => d.message);
    throw refuse(`manifest.json is not an extension manifest (manifest_version 2 or 3, name, version): ${problems.join('; ')}`);
  }
  return { root, manifest: parsed };
}

async function extensionRoot(extracted: string): Promise<string> {
  const entries = await readdir(extracted, { withFileTypes: true });
  if (entries.some((e) => e.name === 'manifest.json' && e.isFile())) return extracted;
  const top = entries.filter((e) => e.name !== MAC_RESOURCE_FORK);
  const only = top.length === 1 && top[0]!.isDirectory() ? join(extracted, top[0]!.name) : undefined;
  if (only && (await stat(join(only, 'manifest.json')).catch(() => undefined))?.isFile()) return only;
  throw refuse('no manifest.json at the root of the zip or in its single top-level folder');
}

/**
 * The name an upload without one gets: the manifest's name (its default locale's message when it
 * is a `__MSG_key__` placeholder) with every run of characters a name may not hold made one `-`.
 */
export async function defaultName(found: FoundManifest): Promise<string | undefined> {
  const name = (await localized(found)) ?? found.manifest.name;
  const clean = name
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 255);
  return new RegExp(EXTENSION_NAME_PATTERN).test(clean) ? clean : undefined;
}

async function localized({ root, manifest }: FoundManifest): Promise<string | undefined> {
  const key = /^__MSG_(\w+)__$/.exec(manifest.name)?.[1];
  if (!key || !manifest.default_locale) return undefined;
  try {
    const messages = (await readJson(join(root, '_locales', manifest.default_locale, 'messages.json'))) as Record<string, { message?: unknown }>;
    // Chromium looks message keys up case-insensitively.
    const hit = Object.entries(messages).find(([k]) => k.toLowerCase() === key.toLowerCase())?.[1]?.message;
    return typeof hit === 'string' && hit.trim() ? hit : undefined;
  } catch {
    return undefined;
  }
}

/** Chromium accepts a byte order mark in front of its JSON files, as editors on Windows write them. */
async function readJson(file: string): Promise<unknown> {
  return JSON.parse((await readFile(file, 'utf8')).replace(/^\uFEFF/, ''));
}
