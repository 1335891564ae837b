import type { ToolSpec } from "@patchbay/protocol";
import { ToolDefinitionError } from "./errors";
import { type CompiledTool, compileTool, type ToolDefinition } from "./tool-definition";

const compiledTools = new WeakMap<Tools, Map<string, CompiledTool>>();

/**
 * The checked, ready-to-run form of a registered tool. For the executor; not part of the public
 * API.
 */
export function compiledToolOf(tools: Tools, name: string): CompiledTool | undefined {
  return compiledTools.get(tools)?.get(name);
}

/**
 * A registry of tools. `register` checks each definition at once (name, description, schema,
 * limits) and generates the JSON Schema the model is told; `list` gives the specs to send to a
 * server or a model.
 *
 * @example
 * ```ts
 * const tools = new Tools()
 *   .register({ name: "get_weather", description: "Current weather in a city", parameters: z.object({ city: z.string() }), run: ({ city }) => weather(city) })
 *   .register({ name: "get_local_context", description: "Local time and timezone", parameters: z.object({}), run: () => new Date().toISOString() });
 * tools.list(); // [{ name: "get_weather", ... }, { name: "get_local_context", ... }]
 * ```
 */
export class Tools {
  readonly #byName = new Map<string, CompiledTool>();
  readonly #listeners = new Set<() => void>();

  constructor(definitions: Iterable<ToolDefinition<any>> = []) {
    compiledTools.set(this, this.#byName);
    for (const definition of definitions) this.register(definition);
  }

  /**
   * Adds a tool. The argument type comes from a zod schema, or from the type parameter for a
   * plain JSON Schema (which is checked too, so the type holds). Throws a
   * `ToolDefinitionError` for a duplicate or invalid name, a missing description, a schema that
   * is not an object schema, or a bad limit.
   */
  register<TArgs = Record<string, unknown>>(definition: ToolDefinition<TArgs>): this {
    const compiled = compileTool(definition);
    if (this.#byName.has(compiled.spec.name)) {
      throw new ToolDefinitionError(
        compiled.spec.name,
        "name",
        "a tool with this name is already registered",
      );
    }
    this.#byName.set(compiled.spec.name, compiled);
    this.#changed();
    return this;
  }

  /** Removes a tool; `true` when there was one by that name. Calls already running finish. */
  unregister(name: string): boolean {
    const removed = this.#byName.delete(name);
    if (removed) this.#changed();
    return removed;
  }

  /**
   * Calls `listener` after each `register` and `unregister`, so a host that already told a
   * server its tools (a dispatch worker) can tell it again. Returns the function that stops it.
   *
   * @example
   * ```ts
   * const stop = tools.onChange(() => console.log(tools.names()));
   * ```
   */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #changed(): void {
    for (const listener of this.#listeners) listener();
  }

  /** The specs of every tool, in registration order. */
  list(): ToolSpec[] {
    return [...this.#byName.values()].map((tool) => tool.spec);
  }

  /** The definition registered under `name`. */
  get(name: string): ToolDefinition<any> | undefined {
    return this.#byName.get(name)?.definition;
  }

  /** Whether a tool by that name is registered. */
  has(name: string): boolean {
    return this.#byName.has(name);
  }

  /** The names of every tool, in registration order. */
  names(): string[] {
    return [...this.#byName.keys()];
  }

  /** How many tools are registered. */
  get size(): number {
    return this.#byName.size;
  }
}
