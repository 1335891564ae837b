// The size budget of the browser entry. Bundles pages that use the built package (dist/) the way
// an app's bundler would (esbuild, the "browser" condition, code splitting, minified, gzip level
// 9) and fails when a page is over its budget, when a page that brings no zod gets zod anyway, or
// when anything Node-only ends up in a bundle. Sizes: the initial load (the entry chunk and every
// chunk it imports statically) and "all" (that plus every chunk loaded on demand: the JSON Schema
// validator, fetched when a JSON Schema tool is registered, the wording of refused zod arguments,
// and the image checks, fetched when a tool first returns images), always without jose and the
// signing code that comes with it, which only createUserToken loads: a page has no secret.
// Run after `pnpm build` of @patchbay/protocol, @patchbay/tools and this package.
// `--before <dir>` measures another build of the package (say, main's) the same way, no budget.

import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";

const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const beforeIndex = process.argv.indexOf("--before");
const dir = beforeIndex > 0 ? process.argv[beforeIndex + 1] : packageDir;
const entry = join(dir, "dist/index.browser.js");
if (!existsSync(entry)) {
  console.error(`${entry} is missing: run \`pnpm build\` first`);
  process.exit(1);
}

const KIB = 1024;
// The goals are the budgets: 30 KiB for pages that bring their zod (everything but jose counted),
// 20 KiB for pages without zod (the initial load counted). Close to a budget, mind that "all" is
// the gzip of every chunk in one stream: moving code between chunks moves it by a few tenths of a
// KiB (gzip looks back 32 KiB), so a split that saves initial bytes can cost more in all.
const GOAL_WITH_ZOD = 30 * KIB;
const GOAL_WITHOUT_ZOD = 20 * KIB;
// Each page: what it imports, whether zod is the page's own (external, not counted), the budget.
const pages = [
  {
    name: "the whole browser entry, zod the page's own",
    source: `export * from ${JSON.stringify(entry)};`,
    zodExternal: true,
    budget: GOAL_WITH_ZOD,
    counts: "all",
  },
  {
    name: "a page with a zod tool, zod the page's own",
    source: `import { Client, Tools } from ${JSON.stringify(entry)};
import { z } from "zod";
const tools = new Tools().register({ name: "where", description: "d", parameters: z.object({ why: z.string() }), run: () => "here" });
export const session = new Client({ baseUrl: location.origin }).agent("a").sessions.create({ tools });`,
    zodExternal: true,
    budget: GOAL_WITH_ZOD,
    counts: "all",
  },
  {
    name: "a page with a JSON Schema tool (no zod)",
    source: `import { Client, Tools } from ${JSON.stringify(entry)};
const tools = new Tools().register({ name: "where", description: "d", parameters: { type: "object", properties: { why: { type: "string" } } }, run: () => "here" });
export const session = new Client({ baseUrl: location.origin }).agent("a").sessions.create({ tools });`,
    zodExternal: false,
    budget: GOAL_WITHOUT_ZOD,
    counts: "initial",
  },
  {
    name: "a page with no tools (no zod)",
    source: `import { Client } from ${JSON.stringify(entry)};
export const session = new Client({ baseUrl: location.origin }).agent("a").sessions.create();`,
    zodExternal: false,
    budget: GOAL_WITHOUT_ZOD,
    counts: "initial",
  },
];

// esbuild names chunks by a hash that depends on where the files are (a fresh clone elsewhere gets
// other names), and the names are in the code that imports them, so gzip moved by a few bytes from
// one checkout to the next on the same code. Measure with names that depend on the code only: each
// hash becomes a fixed name for the chunk's rank among the chunks sorted by their code with every
// hash blanked.
const HASH = /-([A-Z0-9]{8})\.js/g;
function stableChunkNames(byPath) {
  const blank = (text) => text.replace(HASH, "-00000000.js");
  const texts = new Map([...byPath].map(([path, bytes]) => [path, Buffer.from(bytes).toString("utf8")]));
  const ranked = [...texts]
    .filter(([path]) => /-[A-Z0-9]{8}\.js$/.test(path))
    .map(([path, text]) => ({
      hash: [...path.matchAll(HASH)].at(-1)[1],
      key: `${blank(path)}\n${blank(text)}`,
    }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  // Names as incompressible as esbuild's own, so the figure is what an app's build would weigh.
  const name = (rank) =>
    createHash("sha256")
      .update(`chunk ${rank}`)
      .digest("base64")
      .replace(/[^A-Z0-9]/g, "")
      .slice(0, 8);
  const renamed = new Map(ranked.map(({ hash }, rank) => [hash, name(rank)]));
  const rename = (text) =>
    text.replace(HASH, (whole, hash) => (renamed.has(hash) ? `-${renamed.get(hash)}.js` : whole));
  return new Map([...texts].map(([path, text]) => [path, Buffer.from(rename(text))]));
}

const kib = (bytes) => `${(bytes / KIB).toFixed(2)} KiB`;
const work = mkdtempSync(join(tmpdir(), "patchbay-size-"));
const failures = [];
try {
  for (const page of pages) {
    const file = join(work, "page.js");
    writeFileSync(file, page.source);
    const result = await build({
      entryPoints: [file],
      absWorkingDir: work,
      bundle: true,
      splitting: true,
      outdir: join(work, "out"),
      write: false,
      format: "esm",
      platform: "browser",
      conditions: ["browser"],
      target: "es2022",
      minify: true,
      metafile: true,
      logLevel: "silent",
      external: page.zodExternal ? ["zod", "zod/*"] : [],
    });
    const inputs = Object.keys(result.metafile.inputs);
    const nodeOnly = inputs.filter(
      (input) =>
        input.startsWith("node:") || /node_modules\/(\.pnpm\/ws@[^/]+\/node_modules\/)?ws\//.test(input),
    );
    if (nodeOnly.length > 0) failures.push(`${page.name}: pulls in Node-only code: ${nodeOnly.join(", ")}`);
    // What ends up in the output (an input esbuild read and then shook out entirely does not count).
    const emitted = Object.values(result.metafile.outputs).flatMap((o) =>
      Object.entries(o.inputs)
        .filter(([, { bytesInOutput }]) => bytesInOutput > 0)
        .map(([input]) => input),
    );
    const zod = emitted.filter((input) =>
      /node_modules\/(\.pnpm\/[^/]+\/node_modules\/)?zod(-to-json-schema)?\//.test(input),
    );
    if (zod.length > 0)
      failures.push(`${page.name}: bundles ${zod.length} files of zod or zod-to-json-schema`);

    // The initial load: the entry chunk and, transitively, every chunk it imports statically.
    const outputs = result.metafile.outputs;
    const byPath = stableChunkNames(
      new Map(result.outputFiles.map((f) => [f.path.slice(work.length + 1), f.contents])),
    );
    const entryChunk = Object.keys(outputs).find((o) => outputs[o].entryPoint);
    const initial = new Set();
    const visit = (path) => {
      if (initial.has(path)) return;
      initial.add(path);
      for (const i of outputs[path].imports) if (i.kind === "import-statement" && !i.external) visit(i.path);
    };
    visit(entryChunk);
    const join_ = (paths) => Buffer.concat([...paths].map((p) => byPath.get(p)));
    const code = join_(initial);
    const isJose = (chunk) =>
      Object.keys(outputs[chunk].inputs).some((i) =>
        /node_modules\/(\.pnpm\/[^/]+\/node_modules\/)?jose\//.test(i),
      );
    const lazy = Object.keys(outputs).filter((o) => !initial.has(o) && o.endsWith(".js"));
    const gzip = (paths) => gzipSync(join_(paths), { level: 9 }).byteLength;
    const sizes = { initial: gzip(initial), all: gzip([...initial, ...lazy.filter((c) => !isJose(c))]) };
    const counted = sizes[page.counts];
    const over = counted > page.budget;
    console.log(`${page.name}`);
    console.log(
      `  initial load ${kib(code.byteLength)} minified, ${kib(sizes.initial)} min+gzip; all but jose ${kib(sizes.all)} min+gzip; budget ${kib(page.budget)} (${page.counts})${over ? "  OVER" : ""}`,
    );
    for (const chunk of lazy) {
      const bytes = byPath.get(chunk);
      const names = Object.keys(outputs[chunk].inputs).map(
        (i) =>
          i.match(/node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)/)?.[1] ??
          i.replace(/^.*\/packages\//, "").replace(/-[A-Z0-9]{8}\.js$/, ""),
      );
      console.log(
        `    on demand ${kib(gzipSync(bytes, { level: 9 }).byteLength).padStart(9)} min+gzip: ${[...new Set(names)].join(", ")}`,
      );
    }
    if (over && beforeIndex < 0)
      failures.push(`${page.name}: ${kib(counted)} min+gzip, over the budget of ${kib(page.budget)}`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
if (beforeIndex > 0) process.exit(0);
if (failures.length > 0) {
  for (const failure of failures) console.error(`size budget: ${failure}`);
  process.exit(1);
}
console.log("every page is within its budget");
