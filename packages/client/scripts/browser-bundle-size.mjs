// Bundles the browser entry of the built package (dist/index.browser.js) with every dependency,
// the way an app's bundler would with the "browser" condition, minifies it, and prints the raw,
// minified and gzipped sizes. Fails if anything Node-only ends up in the bundle.
// Run after `pnpm build` (and the builds of @patchbay/protocol and @patchbay/tools).

import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";

const dir = join(dirname(fileURLToPath(import.meta.url)), "..");
const entry = join(dir, "dist/index.browser.js");
if (!existsSync(entry)) {
  console.error("dist/index.browser.js is missing: run `pnpm build` first");
  process.exit(1);
}

const common = {
  entryPoints: [entry],
  bundle: true,
  write: false,
  format: "esm",
  platform: "browser",
  conditions: ["browser"],
  target: "es2022",
  metafile: true,
  logLevel: "silent",
};
const plain = await build({ ...common, minify: false });
const minified = await build({ ...common, minify: true });

const nodeOnly = Object.keys(minified.metafile.inputs).filter(
  (input) => input.startsWith("node:") || /node_modules\/(\.pnpm\/ws@[^/]+\/node_modules\/)?ws\//.test(input),
);
if (nodeOnly.length > 0) {
  console.error(`the browser bundle pulls in Node-only code: ${nodeOnly.join(", ")}`);
  process.exit(1);
}

const code = minified.outputFiles[0].contents;
const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;
const byPackage = new Map();
for (const [input, { bytesInOutput }] of Object.entries(minified.metafile.outputs).flatMap(([, output]) =>
  Object.entries(output.inputs),
)) {
  const match = input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\/(?!.*node_modules)/);
  const name = match
    ? match[1]
    : input.includes("/packages/")
      ? input.split("/packages/")[1].split("/")[0]
      : input;
  byPackage.set(name, (byPackage.get(name) ?? 0) + bytesInOutput);
}
console.log(`browser entry, bundled with its dependencies:`);
console.log(`  raw      ${kib(plain.outputFiles[0].contents.byteLength)}`);
console.log(`  minified ${kib(code.byteLength)}`);
console.log(`  min+gzip ${kib(gzipSync(code, { level: 9 }).byteLength)}`);
console.log(`minified bytes by package:`);
for (const [name, bytes] of [...byPackage].sort((a, b) => b[1] - a[1]))
  console.log(`  ${name.padEnd(24)} ${kib(bytes)}`);
