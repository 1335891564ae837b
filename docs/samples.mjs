// The code samples of the documentation, read from the markdown: every fenced block of TypeScript,
// Python or shell in docs/ and in the package READMEs. CI runs them (docs/test/samples.test.ts) and
// compiles the TypeScript ones (extract-samples.mjs).
//
// A sample runs unless the line before its fence says otherwise, with a reason the reader can check:
//   <!-- sample: not run: needs an OpenAI key -->
// A sample that runs may name what the test does with it once it has run:
//   <!-- sample: run; call book_flight {"flight_id":"LH400","seats":2} -->   the model calls the tool
//   <!-- sample: run; channel message -->   a channel message is posted while the worker runs
// Shell samples have no default: each says whether it runs or why not.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

export const repoRoot = join(import.meta.dirname, "..");

const LANGUAGES = {
  ts: "ts",
  typescript: "ts",
  tsx: "tsx",
  python: "python",
  py: "python",
  sh: "sh",
  bash: "sh",
  shell: "sh",
};

/** The markdown files whose samples are checked: docs/ (but not the generated API pages) and each package's README. */
export function documentationFiles() {
  const files = [];
  const walk = (dir) => {
    for (const name of readdirSync(dir).sort()) {
      if (name.startsWith(".") || name === "node_modules" || name === "api") continue;
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith(".md")) files.push(path);
    }
  };
  walk(join(repoRoot, "docs"));
  for (const parent of ["packages", "sdks"]) {
    for (const name of readdirSync(join(repoRoot, parent)).sort()) {
      const readme = join(repoRoot, parent, name, "README.md");
      try {
        if (statSync(readme).isFile()) files.push(readme);
      } catch {}
    }
  }
  return files;
}

/**
 * The samples of one markdown file. `mode` is "run", "not run" or "undeclared" (a shell sample
 * without a marker, or a marker that does not parse); `problem` says what is wrong with a marker.
 */
export function readSamples(path) {
  const text = readFileSync(path, "utf8");
  const file = relative(repoRoot, path);
  const samples = [];
  for (const match of text.matchAll(/^```(\w+)([^\n]*)\n([\s\S]*?)^```/gm)) {
    const lang = LANGUAGES[match[1]];
    if (!lang) continue;
    const line = text.slice(0, match.index).split("\n").length;
    const before = text.slice(0, match.index).trimEnd().split("\n").at(-1) ?? "";
    const marker = /^<!--\s*sample:\s*(.*?)\s*-->$/.exec(before.trim());
    const sample = {
      file,
      line,
      id: `${file}:${line}`,
      lang,
      info: match[2].trim(),
      code: match[3],
      mode: "run",
      reason: "",
      followUp: "",
    };
    if (!marker) {
      if (lang === "sh") {
        sample.mode = "undeclared";
        sample.problem =
          "a shell sample needs a marker: <!-- sample: run --> or <!-- sample: not run: <why> -->";
      }
    } else {
      const notRun = /^not run:\s*(.*)$/.exec(marker[1]);
      const run = /^run(?:;\s*(.*))?$/.exec(marker[1]);
      if (notRun) {
        sample.mode = "not run";
        sample.reason = notRun[1];
        if (sample.reason.length < 10) {
          sample.mode = "undeclared";
          sample.problem = "a sample that is not run says why (<!-- sample: not run: <why> -->)";
        }
      } else if (run) {
        sample.followUp = run[1] ?? "";
      } else {
        sample.mode = "undeclared";
        sample.problem = `marker not understood: ${marker[1]}`;
      }
    }
    samples.push(sample);
  }
  return samples;
}

/** Every sample of the documentation, in file order. */
export function allSamples() {
  return documentationFiles().flatMap(readSamples);
}
