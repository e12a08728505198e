import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { RbrowseClient } from '../src/client.js';
import { paths } from './daemon-control.js';
import { startDaemonWithProgress } from './progress.js';

export interface GlobalOptions {
  baseUrl?: string;
  apiKey?: string;
  project?: string;
}

/**
 * The client for a command: an explicit --base-url / KERNEL_BASE_URL targets any Kernel-compatible
 * server; otherwise the local daemon of RBROWSE_HOME, started first when it is not running.
 */
export async function clientFor(cmd: Command): Promise<RbrowseClient> {
  const opts = cmd.optsWithGlobals() as GlobalOptions;
  const remote = opts.baseUrl ?? process.env.KERNEL_BASE_URL;
  const client = remote
    ? new RbrowseClient(remote.replace(/\/+$/, ''), opts.apiKey ?? process.env.KERNEL_API_KEY ?? tryLocalKey())
    : new RbrowseClient((await startDaemonWithProgress()).base_url, opts.apiKey ?? localKey());
  const project = opts.project ?? process.env.KERNEL_PROJECT;
  if (!project) return client;
  // The header takes a project id; a name is looked up first, as Kernel's CLI does.
  const { id } = await client.call('getProject', { params: { id: project } });
  return new RbrowseClient(client.baseUrl, client.apiKey, id);
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
