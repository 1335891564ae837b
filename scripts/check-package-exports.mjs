// Smoke-imports a built package through its own exports map from both module systems, the way a
// user's ESM app and a user's CJS app would, and checks that both expose the same named exports.
// Every subpath with an `import` and a `require` condition is checked ("." and, say,
// "./runtime"). Run from a package directory after `build`.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const dir = process.cwd();
const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
const require = createRequire(join(dir, "package.json"));

let failed = false;
for (const [subpath, conditions] of Object.entries(pkg.exports)) {
  if (typeof conditions !== "object" || !conditions.import?.default || !conditions.require?.default) continue;
  const name = subpath === "." ? pkg.name : `${pkg.name}/${subpath.slice(2)}`;
  const esm = await import(pathToFileURL(join(dir, conditions.import.default)).href);
  const cjs = require(join(dir, conditions.require.default));

  const esmNames = Object.keys(esm)
    .filter((n) => n !== "default")
    .sort();
  const cjsNames = Object.keys(cjs)
    .filter((n) => n !== "default" && n !== "__esModule")
    .sort();
  const missing = esmNames.filter((n) => !cjsNames.includes(n));
  const extra = cjsNames.filter((n) => !esmNames.includes(n));
  if (esmNames.length === 0) {
    console.error(`${name}: the ESM build exports nothing`);
    failed = true;
    continue;
  }
  if (missing.length || extra.length) {
    console.error(
      `${name}: ESM and CJS builds differ. Only in ESM: ${missing.join(", ") || "-"}; only in CJS: ${extra.join(", ") || "-"}`,
    );
    failed = true;
    continue;
  }
  console.log(`${name}: ${esmNames.length} named exports, identical from import and require`);
}
if (failed) process.exit(1);
