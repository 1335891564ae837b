import type { ToolSpec } from "@patchbay/protocol";

/**
 * The tools of several lists, one per name: where lists name the same tool, the first list's
 * spec wins (the server's over a worker's over the page's; the first attached page's; the first
 * connected worker's).
 */
export function firstByName(lists: Iterable<Iterable<ToolSpec>>): ToolSpec[] {
  const byName = new Map<string, ToolSpec>();
  for (const specs of lists)
    for (const spec of specs) if (!byName.has(spec.name)) byName.set(spec.name, spec);
  return [...byName.values()];
}
