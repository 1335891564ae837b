/**
 * One problem in a connector's configuration. `path` is the YAML path from the agent file's root
 * when the connector comes from one (`connectors.0.mcp.command`), else from the entry.
 *
 * @example
 * ```ts
 * const issue: ConnectorConfigIssue = { path: ["connectors", 0, "mcp", "command"], message: "is required" };
 * ```
 */
export interface ConnectorConfigIssue {
  path: (string | number)[];
  message: string;
  /** The problem is the key at the end of `path` itself (an unknown kind), not its value. */
  atKey?: boolean;
  /** Where in the YAML file, when the config came from one. */
  line?: number;
  column?: number;
}

/**
 * The base of every error `@patchbay/connectors` throws. `code` is stable; switch on it, never on
 * the message.
 *
 * @example
 * ```ts
 * try { await startConnectors(entries); } catch (e) { if (e instanceof ConnectorError) console.log(e.code); }
 * ```
 */
export class ConnectorError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ConnectorError";
    this.code = code;
  }
}

/**
 * Connector configuration that cannot be used: an unknown kind, a config its kind refuses, an
 * unset `${VAR}`. Each issue names the field by its path; the server turns them into file:line
 * errors.
 *
 * @example
 * ```ts
 * try { prepareConnectors(entries, { env }); } catch (e) { if (e instanceof ConnectorConfigError) e.issues[0]?.path; }
 * ```
 */
export class ConnectorConfigError extends ConnectorError {
  readonly issues: ConnectorConfigIssue[];
  /** The YAML file the config came from, when it did. */
  readonly file: string | undefined;
  constructor(issues: ConnectorConfigIssue[], file?: string) {
    const lines = issues.map((issue) => {
      const where =
        file === undefined
          ? ""
          : `${file}${issue.line === undefined ? "" : `:${issue.line}:${issue.column ?? 1}`}: `;
      return `${where}${issue.path.join(".")}: ${issue.message}`;
    });
    super("invalid_connector_config", `invalid connector config:\n${lines.join("\n")}`);
    this.name = "ConnectorConfigError";
    this.issues = issues;
    this.file = file;
  }
}
