// Writes every ```ts / ```typescript block of the guides to .samples/<guide>.<n>.ts so that
// `tsc` compiles them against the built packages. Each block is its own module: a sample that
// needs something from its surroundings declares it (`declare const session: Session;`).
// A block fenced as ```ts ignore is prose-only (a fragment shown for shape) and is not compiled.
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, join, relative } from "node:path";

const docs = import.meta.dirname;
const out = join(docs, ".samples");
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

function* markdownFiles(dir) {
  for (const name of readdirSync(dir)) {
    if (name.startsWith(".") || name === "node_modules" || name === "api") continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* markdownFiles(path);
    else if (name.endsWith(".md")) yield path;
  }
}

let count = 0;
for (const file of markdownFiles(docs)) {
  const text = readFileSync(file, "utf8");
  const fence = /^```(ts|typescript)([^\n]*)\n([\s\S]*?)^```/gm;
  let n = 0;
  for (const match of text.matchAll(fence)) {
    n += 1;
    if (/\bignore\b/.test(match[2])) continue;
    const line = text.slice(0, match.index).split("\n").length;
    const name = `${relative(docs, file).replaceAll("/", "__").replace(/\.md$/, "")}.${n}.ts`;
    const header = `// From ${relative(docs, file)} line ${line}. Generated: edit the guide, not this file.\nexport {};\n`;
    writeFileSync(join(out, name), header + match[3]);
    count += 1;
  }
}
console.log(`extracted ${count} TypeScript samples from the guides into ${basename(out)}/`);
