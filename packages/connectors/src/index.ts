export { builtinConnectors } from "./builtin-connectors";
export type {
  Connector,
  ConnectorContext,
  ConnectorLogger,
  ConnectorSession,
  ConnectorTool,
  ConnectorToolAnnotations,
} from "./connector";
export { defineConnector } from "./connector";
export type { ConnectorEntry } from "./connector-entry";
export { ConnectorEntriesSchema, ConnectorEntrySchema, connectorKindOf } from "./connector-entry";
export type { ConnectorSetOptions, ConnectorStatus } from "./connector-set";
export { ConnectorSet } from "./connector-set";
export { readConnectorsFile } from "./connectors-file";
export type { ConnectorConfigIssue } from "./errors";
export { ConnectorConfigError, ConnectorError } from "./errors";
export { interpolateEnv, redactSecrets, referencesEnv } from "./interpolate";
export type { McpConfig } from "./mcp/mcp-config";
export { McpConfigSchema } from "./mcp/mcp-config";
export { mcpConnector } from "./mcp/mcp-connector";
export type { McpCallResult } from "./mcp/mcp-result";
export { toToolResultValue } from "./mcp/mcp-result";
export type { ConnectorRunState } from "./offered-tool";
export {
  isToolOffered,
  needsApproval,
  offeredToolName,
  toOfferedDefinition,
  unknownApprovalTools,
} from "./offered-tool";
export type { OpenApiConfig } from "./openapi/openapi-config";
export { OpenApiConfigSchema } from "./openapi/openapi-config";
export { openApiConnector } from "./openapi/openapi-connector";
export type { OpenApiOperation } from "./openapi/openapi-operations";
export { operationsOf } from "./openapi/openapi-operations";
export type { PreparedConnector } from "./prepare-connectors";
export { prepareConnectors } from "./prepare-connectors";
