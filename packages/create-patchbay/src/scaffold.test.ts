import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ScaffoldError, scaffold } from "./scaffold";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function temp(): string {
  const dir = mkdtempSync(join(tmpdir(), "create-patchbay-"));
  dirs.push(dir);
  return dir;
}
function tarballs(names: string[]): string {
  const dir = temp();
  for (const name of names) writeFileSync(join(dir, `patchbay-${name}-0.1.0.tgz`), "not really a tarball");
  return dir;
}
const ALL = ["protocol", "tools", "models", "connectors", "server", "client", "dispatch"];

describe("scaffold", () => {
  it("writes an ESM TypeScript project with a server, a tool, a page, .env.example and its own scripts", () => {
    const dir = join(temp(), "my-agent");
    const result = scaffold({ dir });
    expect(result.name).toBe("my-agent");
    for (const file of [
      "agents/assistant.yaml",
      "src/app.ts",
      "src/main.ts",
      "src/tools.ts",
      "src/page.ts",
      "public/index.html",
      "test/app.test.ts",
      ".env.example",
      ".gitignore",
      "tsconfig.json",
      "package.json",
    ]) {
      expect(result.files).toContain(file);
      expect(existsSync(join(dir, file)), file).toBe(true);
    }
    const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    expect(manifest).toMatchObject({
      name: "my-agent",
      type: "module",
      scripts: { start: "tsx src/main.ts" },
    });
    expect(manifest.scripts.test).toContain("tsx --test");
    expect(manifest.dependencies["@patchbay/server"]).toBe("^0.1.0");
    // The guides' imports (ToolError, the types) come from @patchbay/tools: a dependency of its own.
    expect(manifest.dependencies["@patchbay/tools"]).toBe("^0.1.0");
    expect(manifest.overrides).toBeUndefined();
    // The agent file uses the one key style the server documents.
    expect(readFileSync(join(dir, "agents/assistant.yaml"), "utf8")).toContain("tool_calls:");
    // Git leaves out the data folders of npm start (.patchbay-data/) and of `patchbay serve`
    // (patchbay-data/), and the page has an icon of its own (no /favicon.ico 404 on every load).
    const ignored = readFileSync(join(dir, ".gitignore"), "utf8").split("\n");
    expect(ignored).toEqual(
      expect.arrayContaining([".env", "node_modules/", ".patchbay-data/", "patchbay-data/"]),
    );
    expect(readFileSync(join(dir, "public/index.html"), "utf8")).toContain(
      '<link rel="icon" href="data:," />',
    );
  });

  it("installs from a folder of tarballs: copies them in and points every @patchbay package at its file", () => {
    const dir = join(temp(), "from-tarballs");
    const from = tarballs(ALL);
    const result = scaffold({ dir, from });
    const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    expect(manifest.dependencies["@patchbay/client"]).toBe(
      "file:patchbay-packages/patchbay-client-0.1.0.tgz",
    );
    expect(manifest.overrides["@patchbay/protocol"]).toBe(
      "file:patchbay-packages/patchbay-protocol-0.1.0.tgz",
    );
    expect(existsSync(join(dir, "patchbay-packages", "patchbay-tools-0.1.0.tgz"))).toBe(true);
    expect(result.files).toContain("patchbay-packages/patchbay-server-0.1.0.tgz");
    // React is not a dependency of the project, and not required among the tarballs...
    expect(manifest.dependencies["@patchbay/react"]).toBeUndefined();
    expect(existsSync(join(dir, "patchbay-packages", "patchbay-react-0.1.0.tgz"))).toBe(false);
  });

  it("copies @patchbay/react's tarball in when the folder has it, for `npm i` later", () => {
    const dir = join(temp(), "with-react");
    scaffold({ dir, from: tarballs([...ALL, "react"]) });
    const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    expect(existsSync(join(dir, "patchbay-packages", "patchbay-react-0.1.0.tgz"))).toBe(true);
    expect(manifest.dependencies["@patchbay/react"]).toBeUndefined();
    expect(manifest.overrides["@patchbay/react"]).toBe("file:patchbay-packages/patchbay-react-0.1.0.tgz");
  });

  it("refuses a folder that is not empty, a missing --from, an incomplete one and a bad name", () => {
    const busy = temp();
    writeFileSync(join(busy, "keep.txt"), "mine");
    const codeOf = (fn: () => unknown) => {
      try {
        fn();
      } catch (error) {
        expect(error).toBeInstanceOf(ScaffoldError);
        return [(error as ScaffoldError).code, (error as Error).message];
      }
      throw new Error("no error");
    };
    expect(codeOf(() => scaffold({ dir: busy, name: "busy" }))).toEqual([
      "target_not_empty",
      `${busy} already exists and is not an empty folder`,
    ]);
    expect(codeOf(() => scaffold({ dir: join(temp(), "a"), from: "/nonexistent/dist-packages" }))[0]).toBe(
      "from_missing",
    );
    const [code, message] = codeOf(() =>
      scaffold({ dir: join(temp(), "b"), from: tarballs(["protocol", "server"]) }),
    );
    expect(code).toBe("from_incomplete");
    expect(message).toContain(
      "no tarball for @patchbay/tools, @patchbay/models, @patchbay/connectors, @patchbay/client, @patchbay/dispatch",
    );
    const upper = join(temp(), "My Agent");
    mkdirSync(upper);
    expect(codeOf(() => scaffold({ dir: upper }))[0]).toBe("bad_name");
  });
});
