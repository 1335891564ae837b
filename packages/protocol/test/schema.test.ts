// The checked-in JSON Schema and the generated tables of docs/protocol.md must match the zod
// schemas; `pnpm --filter @patchbay/protocol generate:schema` rewrites them.

import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { schemaDir, schemaFiles, staleOutputs } from "../scripts/generate-schema";
import { JSON_SCHEMA_DIALECT } from "../src/index";

describe("schema/ and docs/protocol.md", () => {
  it("are up to date with the zod schemas", () => {
    expect(staleOutputs()).toEqual([]);
  });

  it("hold a draft 2020-12 schema for every channel, every frame type and the shared types", () => {
    const files = schemaFiles();
    expect(files.has("client-to-server/hello.schema.json")).toBe(true);
    expect(files.has("server-to-worker/hosted.call.schema.json")).toBe(true);
    expect(files.has("types/tool-spec.schema.json")).toBe(true);
    for (const [path, text] of files) {
      const schema = JSON.parse(text) as { $schema: string; $id: string; title: string };
      expect(schema.$schema, path).toBe(JSON_SCHEMA_DIALECT);
      expect(schema.$id, path).toMatch(/^urn:patchbay:protocol:1:/);
    }
  });

  it("never forbid unknown fields (the compatibility rule)", () => {
    const paths = readdirSync(schemaDir, { recursive: true, encoding: "utf8" }).filter((p) =>
      p.endsWith(".json"),
    );
    expect(paths.length).toBeGreaterThan(60);
    for (const path of paths) {
      expect(readFileSync(join(schemaDir, path), "utf8"), path).not.toMatch(
        /"additionalProperties":\s*false/,
      );
    }
  });
});
