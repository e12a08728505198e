import type Kernel from '@onkernel/sdk';
import { toFile } from '@onkernel/sdk';
import { appFiles, zipFiles } from '../../cli/app-zip.js';
import { ROOT, waitFor } from './daemon.js';

/** Deploys fixtures/apps/<name> through the official SDK and waits until it runs; its id. */
export async function deployFixtureApp(kernel: Kernel, name: string, envVars: Record<string, string> = {}, entrypoint = 'index.ts'): Promise<string> {
  const dir = `${ROOT}fixtures/apps/${name}`;
  const file = await toFile(await zipFiles(dir, (await appFiles(dir)).files), `${name}.zip`);
  const created = await kernel.deployments.create({ file, entrypoint_rel_path: entrypoint, env_vars: envVars });
  const done = await waitFor(
    async () => {
      const d = await kernel.deployments.retrieve(created.id);
      return d.status === 'running' || d.status === 'failed' ? d : undefined;
    },
    240_000,
    `the deployment of ${name}`,
  );
  if (done!.status !== 'running') throw new Error(`the deployment of ${name} failed: ${done!.status_reason}`);
  return created.id;
}
