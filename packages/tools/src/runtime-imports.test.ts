import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

// The package runs in browsers: its runtime code may import only these.
const ALLOWED = [
  "@patchbay/protocol",
  "@patchbay/protocol/lite",
  "@patchbay/protocol/runtime",
  "@cfworker/json-schema",
  "zod/v4/core",
  "zod-to-json-schema",
];

describe("runtime imports", () => {
  it("uses no Node-only module and no undeclared dependency", () => {
    const dir = new URL(".", import.meta.url).pathname;
    const specifiers = readdirSync(dir)
      .filter((file) => file.endsWith(".ts") && !file.endsWith(".test.ts"))
      .flatMap((file) =>
        [...readFileSync(join(dir, file), "utf8").matchAll(/^import[^"']*["']([^"']+)["']/gm)].map(
          (m) => m[1]!,
        ),
      )
      .filter((specifier) => !specifier.startsWith("./"));
    expect(specifiers.length).toBeGreaterThan(0);
    expect([...new Set(specifiers)].filter((specifier) => !ALLOWED.includes(specifier))).toEqual([]);
  });

  it("imports zod, zod-to-json-schema and the zod protocol entry only from the Node-only fallback", () => {
    const dir = new URL(".", import.meta.url).pathname;
    const heavy = readdirSync(dir)
      .filter((file) => file.endsWith(".ts") && !file.endsWith(".test.ts"))
      .filter((file) =>
        /^import\s+(?!type\b)[^"']*["'](zod[^"']*|@patchbay\/protocol)["']/m.test(
          readFileSync(join(dir, file), "utf8"),
        ),
      );
    // dispatch-tool-calls runs on servers and workers only; a page's bundle drops it.
    expect(heavy.sort()).toEqual(["dispatch-tool-calls.ts", "zod-fallback.ts"]);
  });
});
