import { readdirSync } from 'node:fs';

/**
 * The GPU render nodes of this machine (`/dev/dri/renderD*`), which a browser would need to be
 * given for GPU acceleration. Sessions are not given one yet: `gpu: true` is refused, and the
 * reason says whether the machine has a GPU at all.
 */
export function gpuRenderNodes(dir = '/dev/dri'): string[] {
  try {
    return readdirSync(dir)
      .filter((n) => n.startsWith('renderD'))
      .map((n) => `${dir}/${n}`);
  } catch {
    return [];
  }
}

/** Why a session cannot have GPU acceleration here, in words for its 400 and for doctor. */
export function gpuRefusal(nodes = gpuRenderNodes()): string {
  return nodes.length
    ? `this daemon does not pass a GPU into sessions yet (render nodes here: ${nodes.join(', ')}); create it without gpu`
    : 'this machine has no GPU (no render node under /dev/dri); create it without gpu';
}
