import type { BrowserSession, CreateBrowserBody } from '../../src/api/browsers.js';
import { BadRequestError } from '../../src/errors.js';
import { gpuRefusal } from '../../src/gpu.js';
import type { FeatureLaunch, LaunchContext, SessionFeature } from './features.js';
import type { SessionRecord } from './record.js';

/** The sizes Kernel's API names a browser's memory by, smallest first. */
export const MEMORY_SIZES = ['1GiB', '2GiB', '6GiB', '8GiB', '16GiB'] as const;
export type MemorySize = (typeof MEMORY_SIZES)[number];
const GIB = 1024 ** 3;
const bytesOf = (size: MemorySize) => Number.parseInt(size, 10) * GIB;

/** The one region of a local daemon: Kernel's first, so code that pins a region keeps working. */
export const LOCAL_REGION = 'us-east';

/**
 * Kernel's `memory` and `region` of a session, with their local meaning. A session's memory is its
 * box's memory limit: `memory` on create raises it to that size (a standby browser's box is
 * raised at hand-over); without it the configured limit (RBROWSE_SESSION_MEMORY) holds, answered
 * as the smallest of Kernel's sizes that covers it. There is one region, the machine: any region
 * asked for is kept and echoed, the browser runs here. `network` (private hosts) is kept and
 * echoed too: a local session reaches private hosts through its own network already. `gpu: true`
 * is refused with the reason (headful only, as Kernel's; no GPU is passed into a box); false is
 * what every session has.
 */
export class MachineSize implements SessionFeature {
  private readonly defaultSize: MemorySize;

  constructor(private readonly deps: { defaultBytes: number; setMemoryLimit: (boxId: string, bytes: number) => Promise<void> }) {
    this.defaultSize = MEMORY_SIZES.find((s) => bytesOf(s) >= deps.defaultBytes) ?? '16GiB';
  }

  check(_org: unknown, body: CreateBrowserBody): void {
    if (!body.gpu) return;
    if (body.headless) throw BadRequestError.field('gpu', 'GPU acceleration is for headful sessions only (headless: false)');
    throw BadRequestError.field('gpu', gpuRefusal());
  }

  async launch(ctx: LaunchContext): Promise<FeatureLaunch | undefined> {
    return this.apply(ctx);
  }

  async handOver(ctx: LaunchContext): Promise<FeatureLaunch | undefined> {
    return this.apply(ctx);
  }

  private async apply({ body, record, box }: LaunchContext): Promise<undefined> {
    if (body.region) record.region = body.region;
    if (body.network) record.network = body.network;
    if (body.memory) {
      await this.deps.setMemoryLimit(box.id, Math.max(bytesOf(body.memory), this.deps.defaultBytes));
      record.memory = body.memory;
    }
    return undefined;
  }

  view(record: SessionRecord): Partial<BrowserSession> {
    return {
      region: record.region ?? LOCAL_REGION,
      gpu: false,
      memory: record.memory ?? this.defaultSize,
      ...(record.network ? { network: record.network } : {}),
    };
  }
}
