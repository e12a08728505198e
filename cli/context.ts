import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { RbrowseClient } from '../src/client.js';
import { defaultPort } from '../src/config.js';
import { paths, readDaemonInfo } from './daemon-control.js';
import { startDaemonWithProgress } from './progress.js';

export interface GlobalOptions {
  baseUrl?: string;
  apiKey?: string;
  project?: string;
}

/**
 * The client for a command: an explicit --base-url / KERNEL_BASE_URL targets any Kernel-compatible
 * server; otherwise (or when that URL is this home's own daemon, as `rbrowse env` exports it) the
 * local daemon of RBROWSE_HOME, started first when it is not running. --api-key is used wherever
 * the request goes, KERNEL_API_KEY with KERNEL_BASE_URL (the pair the SDKs read). A KERNEL_API_KEY
 * alone is often a Kernel cloud key kept for the SDK: the local daemon's own key is used then, and
 * the CLI says so rather than ignore it silently.
 */
export async function clientFor(cmd: Command): Promise<RbrowseClient> {
  const opts = cmd.optsWithGlobals() as GlobalOptions;
  const url = opts.baseUrl ?? process.env.KERNEL_BASE_URL;
  const envKey = process.env.KERNEL_API_KEY;
  const key = opts.apiKey ?? (url ? envKey : undefined);
  let client: RbrowseClient;
  if (url && !isOwnDaemon(url)) client = new RbrowseClient(url.replace(/\/+$/, ''), key ?? tryLocalKey());
  else {
    const base = (await startDaemonWithProgress()).base_url;
    if (!key && envKey && envKey !== tryLocalKey()) {
      process.stderr.write("note: KERNEL_API_KEY is not used without KERNEL_BASE_URL; the local daemon's key is (--api-key chooses one)\n");
    }
    client = new RbrowseClient(base, key ?? localKey());
  }
  const project = opts.project ?? process.env.KERNEL_PROJECT;
  if (!project) return client;
  // The header takes a project id; a name is looked up first, as Kernel's CLI does.
  const { id } = await client.call('getProject', { params: { id: project } });
  return new RbrowseClient(client.baseUrl, client.apiKey, id);
}

/** Whether url is where this home's daemon runs (or, stopped, would listen by default). */
function isOwnDaemon(url: string): boolean {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname) || u.pathname.replace(/\/+$/, '') !== '') return false;
  const running = readDaemonInfo();
  if (running) return new URL(running.base_url).port === u.port;
  try {
    return Number(u.port) === defaultPort();
  } catch {
    return false;
  }
}

export function localKey(): string {
  return readFileSync(paths().apiKeyFile, 'utf8').trim();
}

export function adminToken(): string {
  return readFileSync(paths().adminTokenFile, 'utf8').trim();
}

function tryLocalKey(): string | undefined {
  try {
    return localKey();
  } catch {
    return undefined;
  }
}
