import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { RbrowseClient } from '../src/client.js';
import { paths } from './daemon-control.js';
import { startDaemonWithProgress } from './progress.js';

export interface GlobalOptions {
  baseUrl?: string;
  apiKey?: string;
}

/**
 * The client for a command: an explicit --base-url / KERNEL_BASE_URL targets any Kernel-compatible
 * server; otherwise the local daemon of RBROWSE_HOME, started first when it is not running.
 */
export async function clientFor(cmd: Command): Promise<RbrowseClient> {
  const opts = cmd.optsWithGlobals() as GlobalOptions;
  const remote = opts.baseUrl ?? process.env.KERNEL_BASE_URL;
  if (remote) {
    const key = opts.apiKey ?? process.env.KERNEL_API_KEY;
    return new RbrowseClient(remote.replace(/\/+$/, ''), key ?? tryLocalKey());
  }
  const info = await startDaemonWithProgress();
  return new RbrowseClient(info.base_url, opts.apiKey ?? localKey());
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
