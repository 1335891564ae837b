// Smoke-imports a built package through its own exports map from both module systems, the way a
// user's ESM app and a user's CJS app would, and checks that both expose the same named exports.
// Run from a package directory after `build`.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const dir = process.cwd();
const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
const require = createRequire(join(dir, "package.json"));

const esm = await import(pathToFileURL(join(dir, pkg.exports["."].import.default)).href);
const cjs = require(join(dir, pkg.exports["."].require.default));

const esmNames = Object.keys(esm)
  .filter((n) => n !== "default")
  .sort();
const cjsNames = Object.keys(cjs)
  .filter((n) => n !== "default" && n !== "__esModule")
  .sort();
const missing = esmNames.filter((n) => !cjsNames.includes(n));
const extra = cjsNames.filter((n) => !esmNames.includes(n));
if (esmNames.length === 0) {
  console.error(`${pkg.name}: the ESM build exports nothing`);
  process.exit(1);
}
if (missing.length || extra.length) {
  console.error(
    `${pkg.name}: ESM and CJS builds differ. Only in ESM: ${missing.join(", ") || "-"}; only in CJS: ${extra.join(", ") || "-"}`,
  );
  process.exit(1);
}
console.log(`${pkg.name}: ${esmNames.length} named exports, identical from import and require`);
