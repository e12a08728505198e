import type { CustomToolDefinition } from '../../../src/api/webmcp.js';
import { CustomToolDefinitionSchema } from '../../../src/api/webmcp.js';
import { BadRequestError, NotFoundError } from '../../../src/errors.js';
import { newId } from '../../../src/ids.js';
import { validationDetails } from '../../lib/validation-details.js';
import { lazyValidator } from '../../lib/validators.js';

/** A custom tool as kept: what the API shows, and its execute function's source. */
export interface CustomTool extends CustomToolDefinition {
  execute: string;
}

/** Custom tools a session may hold, all namespaces together. */
const MAX_TOOLS = 256;

const validateDefinition = lazyValidator<Omit<CustomToolDefinition, 'id' | 'namespace'>>({
  ...CustomToolDefinitionSchema,
  required: ['kind', 'match', 'tool'],
  additionalProperties: false,
  properties: {
    kind: CustomToolDefinitionSchema.properties.kind,
    match: CustomToolDefinitionSchema.properties.match,
    tool: CustomToolDefinitionSchema.properties.tool,
  },
});

/** A URL pattern as a test of URLs; `*` (and `<all_urls>`) match every page. */
function matcher(pattern: string): (url: string) => boolean {
  if (pattern === '*' || pattern === '<all_urls>') return () => true;
  const p = new URLPattern(pattern);
  return (url) => p.test(url);
}

/**
 * A session's WebMCP custom tools (Kernel's browsers.webmcp.customTools), by namespace: added a
 * batch at a time, atomically (the whole batch or nothing; with overwrite, in place of the
 * namespace's tools), removed one by one. Where they are offered and how they run is
 * SessionWebmcp's; this keeps the definitions and says which match a page.
 */
export class CustomToolSet {
  private readonly tools = new Map<string, CustomTool & { matches: ((url: string) => boolean)[] }>();

  list(): CustomToolDefinition[] {
    return [...this.tools.values()].map(view);
  }

  get(id: string): CustomTool | undefined {
    return this.tools.get(id);
  }

  /** Checks a batch (definitions as the runtime evaluated them) and adds it; the tools added. */
  add(namespace: string, definitions: unknown[], overwrite: boolean): CustomToolDefinition[] {
    const batch = definitions.map((raw, i) => {
      const { execute, ...definition } = (raw ?? {}) as Record<string, unknown>;
      if (!validateDefinition(definition)) {
        throw new BadRequestError(
          `source: definition ${i} is not a tool definition`,
          validationDetails(validateDefinition.errors ?? [], `definitions[${i}]`),
        );
      }
      const matches = definition.match.url_patterns.map((p) => {
        try {
          return matcher(p);
        } catch {
          throw new BadRequestError(`source: definition ${i}: ${JSON.stringify(p)} is not a URL pattern`);
        }
      });
      return { ...definition, id: `ct_${newId()}`, namespace, execute: String(execute), matches };
    });
    const names = batch.map((t) => t.tool.name);
    const twice = names.find((n, i) => names.indexOf(n) !== i);
    if (twice) throw new BadRequestError(`source: two tools are named ${twice}`);
    const kept = [...this.tools.values()].filter((t) => !(overwrite && t.namespace === namespace));
    const clash = kept.find((t) => t.namespace === namespace && names.includes(t.tool.name));
    if (clash)
      throw new BadRequestError(
        `namespace ${namespace} already has a tool named ${clash.tool.name} (${clash.id}): delete it first, or set force_overwrite_namespace`,
      );
    if (kept.length + batch.length > MAX_TOOLS) throw new BadRequestError(`a session holds at most ${MAX_TOOLS} custom tools`);
    if (overwrite) for (const t of this.tools.values()) if (t.namespace === namespace) this.tools.delete(t.id);
    for (const t of batch) this.tools.set(t.id, t);
    return batch.map(view);
  }

  remove(id: string): void {
    if (!this.tools.delete(id)) throw new NotFoundError(`no custom tool ${id} in this session`);
  }

  /** The tools offered on a tab whose document and frames are at these URLs. */
  matching(urls: string[]): CustomTool[] {
    return [...this.tools.values()].filter((t) => t.matches.some((m) => urls.some((u) => m(u))));
  }
}

function view(t: CustomTool): CustomToolDefinition {
  return { id: t.id, kind: t.kind, match: t.match, namespace: t.namespace, tool: t.tool };
}
