import type { Connector } from "./connector";
import { mcpConnector } from "./mcp/mcp-connector";
import { openApiConnector } from "./openapi/openapi-connector";

/**
 * The connector kinds Patchbay ships: `mcp` and `openapi`. Pass more to the server
 * (`createServer({ connectors: [...] })`) to add your own.
 *
 * @example
 * ```ts
 * prepareConnectors(entries, { kinds: [...builtinConnectors, myConnector], env: process.env });
 * ```
 */
export const builtinConnectors: readonly Connector<any>[] = [mcpConnector, openApiConnector];
