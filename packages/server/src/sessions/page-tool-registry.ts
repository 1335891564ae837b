import type { ToolSpec } from "@patchbay/protocol";
import { firstByName } from "../tools/first-by-name";

// Shared by the sessions that have no page tools stored (most): read, never changed in place.
const NO_TOOLS = Object.freeze([]) as unknown as ToolSpec[];

/**
 * Which attached connection brought which page tools to one session, and the last set a page
 * declared (kept with the session, so the model's tool list stays steady while no page is
 * attached, and a call made meanwhile fails at once as "no page connected").
 */
export class PageToolRegistry {
  /** Made when a connection first brings tools: most sessions have none. */
  private byConnection: Map<string, ToolSpec[]> | undefined;
  private last: ToolSpec[];

  constructor(stored: ToolSpec[] = []) {
    this.last = stored.length === 0 ? NO_TOOLS : stored;
  }

  /**
   * Sets the tools one connection brings (empty removes them). Returns the union of the attached
   * connections' tools when it differs from the last one, to be stored; otherwise undefined.
   */
  set(connectionId: string, tools: ToolSpec[]): ToolSpec[] | undefined {
    if (tools.length === 0) this.byConnection?.delete(connectionId);
    else {
      this.byConnection ??= new Map();
      this.byConnection.set(connectionId, tools);
    }
    if (!this.byConnection?.size) return undefined;
    const union = firstByName(this.byConnection.values());
    if (JSON.stringify(union) === JSON.stringify(this.last)) return undefined;
    this.last = union;
    return union;
  }

  /** Whether a connection that brought this tool is attached right now. */
  has(name: string): boolean {
    if (!this.byConnection) return false;
    for (const tools of this.byConnection.values()) if (tools.some((tool) => tool.name === name)) return true;
    return false;
  }

  /**
   * The tools of the attached pages (first declaration of a name wins), or the last set while none
   * is: both are `last`, which every `set` keeps equal to the attached pages' union. The same
   * array until the tools change, so the turn's offered list is made again only then.
   */
  specs(): ToolSpec[] {
    return this.last;
  }

  clear(): void {
    this.byConnection?.clear();
  }
}
