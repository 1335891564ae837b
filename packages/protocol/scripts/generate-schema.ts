// Writes the checked-in JSON Schema of every frame (`schema/`) and the field tables of
// `docs/protocol.md` from the zod schemas, so neither can drift from the code.
//
//   pnpm --filter @patchbay/protocol generate:schema   # rewrite both
//   pnpm --filter @patchbay/protocol check:schema      # exit 1 if either is out of date
//
// The JSON Schema is the *input* shape (what a peer may send): fields with a default are
// optional and objects stay open, because receivers ignore fields they do not know.

import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import type { z } from "zod";
import { type FrameChannel, frameSchema, knownTypes } from "../src/decode-frame";
import * as protocol from "../src/index";
import { JSON_SCHEMA_DIALECT, type JsonSchemaDocument, toWireJsonSchema } from "../src/json-schema";
import { PROTOCOL_VERSION } from "../src/version";

const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");
export const schemaDir = join(packageDir, "schema");
export const docsFile = join(packageDir, "..", "..", "docs", "protocol.md");

export const CHANNELS: readonly FrameChannel[] = [
  "client-to-server",
  "server-to-client",
  "worker-to-server",
  "server-to-worker",
];

/** The shared types that get a schema file and a table of their own, by the export that holds them. */
export const NAMED_TYPES: Record<string, z.ZodType> = {
  ToolSpec: protocol.ToolSpecSchema,
  ToolApprovalSpec: protocol.ToolApprovalSpecSchema,
  ToolResult: protocol.ToolResultSchema,
  ToolOutputContent: protocol.ToolOutputContentSchema,
  ImageContent: protocol.ImageContentSchema,
  NormalizedToolCall: protocol.NormalizedToolCallSchema,
  ConversationItem: protocol.ConversationItemSchema,
  MessageItem: protocol.MessageItemSchema,
  ToolCallItem: protocol.ToolCallItemSchema,
  ApprovalRequest: protocol.ApprovalRequestSchema,
  SessionInfo: protocol.SessionInfoSchema,
  SessionEvent: protocol.SessionEventSchema,
  User: protocol.UserSchema,
  WireError: protocol.WireErrorSchema,
  Usage: protocol.UsageSchema,
  HostedAgent: protocol.HostedAgentSchema,
  InboundMessage: protocol.InboundMessageSchema,
  InboundCall: protocol.InboundCallSchema,
};

// Types rendered as a link in tables instead of being expanded.
const LINKED = new Map<z.ZodType, string>(
  Object.entries(NAMED_TYPES)
    .filter(([name]) => name !== "SessionEvent")
    .map(([name, schema]) => [schema, name]),
);
LINKED.set(protocol.JsonSchemaObjectSchema, "JSON Schema object");
LINKED.set(protocol.JsonObjectSchema, "JSON object");

function kebab(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, "$1-$2").toLowerCase();
}

// ---------------------------------------------------------------------------------------------
// Descriptions: the first paragraph of each schema's JSDoc in src/.
// ---------------------------------------------------------------------------------------------

function readDescriptions(): Map<string, string> {
  const descriptions = new Map<string, string>();
  const srcDir = join(packageDir, "src");
  for (const file of readdirSync(srcDir)) {
    if (!file.endsWith(".ts") || file.endsWith(".test.ts")) continue;
    const text = readFileSync(join(srcDir, file), "utf8");
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    for (const statement of source.statements) {
      if (!ts.isVariableStatement(statement)) continue;
      const docs = ts.getJSDocCommentsAndTags(statement).filter(ts.isJSDoc);
      const comment = docs.at(-1)?.comment;
      if (typeof comment !== "string") continue;
      const paragraph = comment
        .split(/\n\s*\n/)[0]!
        .replace(/\s+/g, " ")
        .trim();
      for (const declaration of statement.declarationList.declarations) {
        if (ts.isIdentifier(declaration.name)) descriptions.set(declaration.name.text, paragraph);
      }
    }
  }
  return descriptions;
}

const exportNames = new Map<unknown, string>();
for (const [name, value] of Object.entries(protocol)) {
  if (!exportNames.has(value)) exportNames.set(value, name);
}

function frameOptions(channel: FrameChannel): z.ZodObject[] {
  return frameSchema(channel).options as unknown as z.ZodObject[];
}

function frameType(option: z.ZodObject): string {
  return (option.shape.type as z.ZodLiteral).value as string;
}

// ---------------------------------------------------------------------------------------------
// JSON Schema files.
// ---------------------------------------------------------------------------------------------

function document(id: string, title: string, description: string | undefined, schema: z.ZodType) {
  const { $schema: _dialect, ...body } = toWireJsonSchema(schema);
  const doc: JsonSchemaDocument = {
    $schema: JSON_SCHEMA_DIALECT,
    $id: `urn:patchbay:protocol:${PROTOCOL_VERSION}:${id}`,
    title,
  };
  if (description) doc.description = description;
  return `${JSON.stringify({ ...doc, ...body }, null, 2)}\n`;
}

/** Every file under `schema/`, by its path relative to that folder, with its exact text. */
export function schemaFiles(): Map<string, string> {
  const descriptions = readDescriptions();
  const files = new Map<string, string>();
  for (const channel of CHANNELS) {
    files.set(
      `${channel}.schema.json`,
      document(
        `frames:${channel}`,
        `Patchbay ${channel} frame`,
        `Any frame that travels ${channel}; the \`type\` field tells which.`,
        frameSchema(channel),
      ),
    );
    for (const option of frameOptions(channel)) {
      const type = frameType(option);
      files.set(
        `${channel}/${type}.schema.json`,
        document(
          `frames:${channel}:${type}`,
          `${type} (${channel})`,
          descriptions.get(exportNames.get(option) ?? ""),
          option,
        ),
      );
    }
  }
  for (const [name, schema] of Object.entries(NAMED_TYPES)) {
    files.set(
      `types/${kebab(name)}.schema.json`,
      document(`types:${name}`, name, descriptions.get(`${name}Schema`), schema),
    );
  }
  return files;
}

// ---------------------------------------------------------------------------------------------
// Field tables for docs/protocol.md.
// ---------------------------------------------------------------------------------------------

type Def = { type: string } & Record<string, any>;
const defOf = (schema: z.ZodType): Def => (schema as any)._zod.def as Def;

interface Row {
  field: string;
  type: string;
  required: string;
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

function code(value: unknown): string {
  return `\`${JSON.stringify(value)}\``;
}

function primitive(schema: z.ZodType): string {
  const json = toWireJsonSchema(schema) as Record<string, any>;
  if ("const" in json) return code(json.const);
  // z.never(): a field the form forbids (the other image form's field).
  if (json.not !== undefined && Object.keys(json.not).length === 0) return "never: must be absent";
  if (Array.isArray(json.enum)) return json.enum.map(code).join(" \\| ");
  const parts: string[] = [];
  switch (json.type) {
    case "string": {
      parts.push("string");
      const { minLength: min, maxLength: max } = json;
      if (min !== undefined && max !== undefined) parts.push(`${min}–${max} chars`);
      else if (max !== undefined) parts.push(`≤ ${max} chars`);
      else if (min === 1) parts.push("non-empty");
      else if (min !== undefined) parts.push(`≥ ${min} chars`);
      if (json.pattern) parts.push(`matching \`${json.pattern}\``);
      break;
    }
    case "integer":
    case "number": {
      parts.push(json.type);
      if (json.exclusiveMinimum === 0) parts.push("≥ 1");
      else if (json.minimum !== undefined) parts.push(`≥ ${json.minimum}`);
      if (json.maximum !== undefined && json.maximum !== MAX_SAFE) parts.push(`≤ ${json.maximum}`);
      break;
    }
    case "boolean":
      parts.push("boolean");
      break;
    default:
      parts.push(Object.keys(json).length <= 1 ? "any JSON" : String(json.type ?? "JSON"));
  }
  return parts.join(", ");
}

function link(name: string): string {
  if (name === "JSON object") return "JSON object";
  if (name === "JSON Schema object") return 'JSON Schema object (`type: "object"`)';
  return `[${name}](#${name.toLowerCase()})`;
}

/** Rows for one object's fields; nested anonymous objects become dotted rows. */
function objectRows(shape: Record<string, z.ZodType>, prefix: string, when = ""): Row[] {
  const rows: Row[] = [];
  for (const [key, field] of Object.entries(shape)) {
    rows.push(...fieldRows(`${prefix}${key}`, field, when));
  }
  return rows;
}

function fieldRows(path: string, schema: z.ZodType, when: string): Row[] {
  let required = when ? `when ${when}` : "yes";
  let suffix = "";
  let inner = schema;
  for (;;) {
    const def = defOf(inner);
    if (def.type === "optional") {
      required = "no";
      inner = def.innerType;
    } else if (def.type === "default") {
      required = `no (default ${code(def.defaultValue)})`;
      inner = def.innerType;
    } else if (def.type === "nullable") {
      suffix = " or `null`";
      inner = def.innerType;
    } else break;
  }
  const rows: Row[] = [];
  const typed = (type: string) => rows.push({ field: `\`${path}\``, type: type + suffix, required });
  const named = LINKED.get(inner);
  const def = defOf(inner);
  if (named) {
    typed(link(named));
  } else if (def.type === "array") {
    const element = def.element as z.ZodType;
    const max = toWireJsonSchema(inner).maxItems;
    const limit = max === undefined ? "" : ` (at most ${max})`;
    const elementName = LINKED.get(element);
    if (elementName) typed(`array of ${link(elementName)}${limit}`);
    else if (defOf(element).type === "object") {
      typed(`array of objects${limit}`);
      rows.push(...objectRows((element as z.ZodObject).shape, `${path}[].`));
    } else typed(`array of ${primitive(element)}${limit}`);
  } else if (def.type === "object") {
    typed("object");
    rows.push(...objectRows((inner as z.ZodObject).shape, `${path}.`));
  } else if (def.type === "union" && typeof def.discriminator === "string") {
    const key = def.discriminator as string;
    const options = def.options as z.ZodObject[];
    const values = options.map((option) => (option.shape[key] as z.ZodLiteral).value);
    typed(`object, one of ${options.length} forms told apart by \`${key}\``);
    rows.push({ field: `\`${path}.${key}\``, type: values.map(code).join(" \\| "), required: "yes" });
    for (const option of options) {
      const value = (option.shape[key] as z.ZodLiteral).value;
      const { [key]: _discriminator, ...rest } = option.shape;
      rows.push(...objectRows(rest, `${path}.`, `\`${key}\` is ${code(value)}`));
    }
  } else if (def.type === "record") {
    typed("JSON object");
  } else {
    typed(primitive(inner));
  }
  return rows;
}

function table(schema: z.ZodType): string {
  const def = defOf(schema);
  let rows: Row[];
  if (def.type === "object") rows = objectRows((schema as z.ZodObject).shape, "");
  else if (def.type === "union" && (def.options as z.ZodType[]).every((option) => LINKED.has(option))) {
    const names = (def.options as z.ZodType[]).map((option) => link(LINKED.get(option)!));
    return `One of ${names.join(", ")}, told apart by \`${def.discriminator ?? "type"}\`.`;
  } else if (def.type === "union" && typeof def.discriminator === "string") {
    rows = fieldRows("", schema, "").slice(1);
    rows = rows.map((row) => ({ ...row, field: row.field.replace("`.", "`") }));
  } else if (def.type === "union") {
    const options = def.options as z.ZodObject[];
    return options
      .map((option, i) => `Form ${i + 1}:\n\n${renderRows(objectRows(option.shape, ""))}`)
      .join("\n\n");
  } else throw new Error(`cannot tabulate a ${def.type}`);
  return renderRows(rows);
}

function renderRows(rows: Row[]): string {
  const lines = ["| Field | Type | Required |", "| --- | --- | --- |"];
  for (const row of rows) lines.push(`| ${row.field} | ${row.type} | ${row.required} |`);
  return lines.join("\n");
}

/** The generated blocks of docs/protocol.md, by marker name (`frame <channel> <type>`, `type <Name>`). */
export function docBlocks(): Map<string, string> {
  const blocks = new Map<string, string>();
  // A frame that travels on several channels with one schema (ping, pong, error) has one table.
  const channelsOf = new Map<z.ZodObject, number>();
  for (const channel of CHANNELS) {
    for (const option of frameOptions(channel)) channelsOf.set(option, (channelsOf.get(option) ?? 0) + 1);
  }
  for (const channel of CHANNELS) {
    for (const option of frameOptions(channel)) {
      const shared = (channelsOf.get(option) ?? 0) > 1;
      blocks.set(
        shared ? `frame ${frameType(option)}` : `frame ${channel} ${frameType(option)}`,
        table(option),
      );
    }
    blocks.set(`types ${channel}`, [...knownTypes(channel)].map((type) => `\`${type}\``).join(", "));
  }
  for (const [name, schema] of Object.entries(NAMED_TYPES)) {
    if (name === "SessionEvent") continue;
    blocks.set(`type ${name}`, table(schema));
  }
  return blocks;
}

const BLOCK = /<!-- BEGIN GENERATED: ([^>]+?) -->\n[\s\S]*?<!-- END GENERATED -->/g;

// The repository's lint leaves Markdown to its authors, but the generated tables are aligned
// with the one formatter (through a config of its own that formats Markdown), so that the text
// is readable raw and regenerating it is deterministic.
function formatMarkdown(text: string): string {
  const biome = createRequire(join(packageDir, "..", "..", "package.json")).resolve(
    "@biomejs/biome/bin/biome",
  );
  const config = join(packageDir, "..", "..", "configs", "biome-markdown");
  const args = [biome, "format", `--config-path=${config}`, "--stdin-file-path=docs/protocol.md"];
  const result = spawnSync(process.execPath, args, {
    input: text,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0) throw new Error(`biome could not format docs/protocol.md: ${result.stderr}`);
  return result.stdout;
}

/**
 * The docs text with every generated block rewritten and formatted. Throws when the docs name a
 * block that does not exist or leave one out, so a new frame cannot go undocumented.
 */
export function renderDocs(text: string): string {
  return formatMarkdown(fillBlocks(text));
}

function fillBlocks(text: string): string {
  const blocks = docBlocks();
  const seen = new Set<string>();
  const out = text.replace(BLOCK, (_match, name: string) => {
    const body = blocks.get(name);
    if (body === undefined)
      throw new Error(`docs/protocol.md has a generated block '${name}' that no schema fills`);
    seen.add(name);
    return `<!-- BEGIN GENERATED: ${name} -->\n${body}\n<!-- END GENERATED -->`;
  });
  const missing = [...blocks.keys()].filter((name) => !seen.has(name));
  if (missing.length > 0) {
    throw new Error(`docs/protocol.md lacks generated blocks for: ${missing.join(", ")}`);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// CLI.
// ---------------------------------------------------------------------------------------------

function listFiles(dir: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dir, { recursive: true, encoding: "utf8" });
  } catch {
    return [];
  }
  return entries.filter((entry) => entry.endsWith(".json")).map((entry) => entry.split("\\").join("/"));
}

/** What differs between the generated output and the files on disk (empty when up to date). */
export function staleOutputs(): string[] {
  const stale: string[] = [];
  const files = schemaFiles();
  for (const [path, text] of files) {
    let current: string | null = null;
    try {
      current = readFileSync(join(schemaDir, path), "utf8");
    } catch {
      stale.push(`schema/${path} is missing`);
      continue;
    }
    if (current !== text) stale.push(`schema/${path} is out of date`);
  }
  for (const path of listFiles(schemaDir)) {
    if (!files.has(path)) stale.push(`schema/${path} is left over from a frame that no longer exists`);
  }
  const docs = readFileSync(docsFile, "utf8");
  if (renderDocs(docs) !== docs) stale.push("docs/protocol.md has out-of-date field tables");
  return stale;
}

function write(): void {
  const files = schemaFiles();
  for (const path of listFiles(schemaDir)) {
    if (!files.has(path)) rmSync(join(schemaDir, path));
  }
  for (const [path, text] of files) {
    mkdirSync(dirname(join(schemaDir, path)), { recursive: true });
    writeFileSync(join(schemaDir, path), text);
  }
  const docs = readFileSync(docsFile, "utf8");
  writeFileSync(docsFile, renderDocs(docs));
  console.log(
    `wrote ${files.size} schema files to ${relative(process.cwd(), schemaDir) || "."} and the tables of docs/protocol.md`,
  );
}

const invokedDirectly = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1];
if (invokedDirectly) {
  if (process.argv.includes("--check")) {
    const stale = staleOutputs();
    if (stale.length > 0) {
      console.error(stale.join("\n"));
      console.error("\nRun `pnpm --filter @patchbay/protocol generate:schema` and commit the result.");
      process.exit(1);
    }
    console.log(`schema/ and docs/protocol.md tables are up to date (${schemaFiles().size} schema files)`);
  } else {
    write();
  }
}
