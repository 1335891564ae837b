// `npm run pack`: an installable tarball of every published package in dist-packages/, so a
// project outside this repository can install Patchbay before it is on the registry
// (`npm create patchbay -- my-agent --from <repo>/dist-packages`, see docs/getting-started.md).
// pnpm pack writes the workspace:* ranges as the packages' versions. Runs after the build
// (scripts/run.mjs builds first).
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dirname, "..");
const defaultOut = join(root, "dist-packages");

/** The workspace folders under packages/ whose package.json is not private. */
export function publishedPackages() {
  return readdirSync(join(root, "packages"), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => join(root, "packages", entry.name))
    .filter((dir) => {
      try {
        return JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).private !== true;
      } catch {
        return false;
      }
    });
}

/** Packs every published package into `out` (emptied first); returns the tarballs' names. */
export function pack(pnpm = ["pnpm", []], out = defaultOut, log = console.log) {
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const [cmd, pre] = pnpm;
  for (const dir of publishedPackages()) {
    const { name } = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    const result = spawnSync(cmd, [...pre, "pack", "--pack-destination", out], {
      cwd: dir,
      encoding: "utf8",
    });
    if (result.status !== 0) {
      process.stderr.write(result.stdout + result.stderr);
      throw new Error(`packing ${name} failed (exit ${result.status})`);
    }
  }
  const files = readdirSync(out)
    .filter((file) => file.endsWith(".tgz"))
    .sort();
  log(`Packed ${files.length} packages into ${out}:`);
  for (const file of files) log(`  ${file}`);
  return files;
}
