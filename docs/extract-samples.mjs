// Writes the TypeScript samples of the documentation to .samples/<file>.<n>.ts so that `tsc`
// compiles them against the built packages. Each block is its own module: a sample that needs
// something from its surroundings declares it (`declare const session: Session;`).
// Compiled: every sample that runs (docs/samples.mjs reads the markers; test/samples.test.ts runs
// them), and the guides' samples that do not run, except a block fenced as ```ts ignore (a
// fragment shown for shape, with packages Patchbay does not depend on).
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { allSamples } from "./samples.mjs";

const out = join(import.meta.dirname, ".samples");
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

let count = 0;
for (const sample of allSamples()) {
  if (sample.lang !== "ts") continue;
  if (/\bignore\b/.test(sample.info)) continue;
  if (sample.mode !== "run" && !sample.file.startsWith("docs/")) continue;
  const name = `${sample.file.replaceAll("/", "__").replace(/\.md$/, "")}.${sample.line}.ts`;
  const header = `// From ${sample.file} line ${sample.line}. Generated: edit the markdown, not this file.\nexport {};\n`;
  writeFileSync(join(out, name), header + sample.code);
  count += 1;
}
console.log(`extracted ${count} TypeScript samples from the documentation into ${basename(out)}/`);
