import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The packages a new project installs, and the ones they pull in (needed among the tarballs). */
const PATCHBAY_PACKAGES = [
  "protocol",
  "tools",
  "models",
  "connectors",
  "server",
  "client",
  "dispatch",
] as const;
/**
 * Packages a project may add later (`npm i ./patchbay-packages/patchbay-react-<version>.tgz`):
 * with `--from`, their tarballs are copied in when the folder has them, and not required.
 */
const OPTIONAL_PACKAGES = ["react"] as const;
/** The folder inside the project that holds the tarballs of `--from`. */
export const VENDOR_DIR = "patchbay-packages";

/**
 * The stable codes of {@link ScaffoldError}.
 *
 * @example
 * ```ts
 * if (error instanceof ScaffoldError && error.code === "target_not_empty") pickAnotherFolder();
 * ```
 */
export type ScaffoldErrorCode = "target_not_empty" | "bad_name" | "from_missing" | "from_incomplete";

/**
 * Why a project could not be scaffolded; the message names the folder or file.
 *
 * @example
 * ```ts
 * try { scaffold({ dir: "my-agent" }); } catch (e) { if (e instanceof ScaffoldError) console.error(e.message); }
 * ```
 */
export class ScaffoldError extends Error {
  readonly code: ScaffoldErrorCode;
  constructor(code: ScaffoldErrorCode, message: string) {
    super(message);
    this.name = "ScaffoldError";
    this.code = code;
  }
}

/**
 * Options of {@link scaffold}.
 *
 * @example
 * ```ts
 * const options: ScaffoldOptions = { dir: "my-agent", from: "../patchbay/dist-packages" };
 * ```
 */
export interface ScaffoldOptions {
  /** The new project's folder: created, or an empty one. */
  dir: string;
  /** The package name. Default: the folder's name. */
  name?: string;
  /**
   * A folder of Patchbay tarballs (what `npm run pack` writes to `dist-packages/`). They are
   * copied into the project and installed from there instead of the registry.
   */
  from?: string;
  /** The range of the @patchbay packages from the registry. Default `^` this package's version. */
  version?: string;
}

/**
 * What {@link scaffold} wrote.
 *
 * @example
 * ```ts
 * const { dir, files } = scaffold({ dir: "my-agent" });
 * ```
 */
export interface ScaffoldResult {
  /** Absolute path of the project. */
  dir: string;
  name: string;
  /** Files written, relative to `dir`. */
  files: string[];
  /** Where each @patchbay package is installed from (a range or a `file:` tarball). */
  patchbay: Record<string, string>;
}

const here = dirname(fileURLToPath(import.meta.url));
/** The template ships beside dist/ (and beside src/ in the repository). */
const TEMPLATE_DIR = join(here, "..", "template");
const OWN_VERSION = (
  JSON.parse(readFileSync(join(here, "..", "package.json"), "utf8")) as { version: string }
).version;

/** Template files whose names npm would drop or mangle when packing get a `_` instead of the dot. */
const RENAMED: Record<string, string> = { _gitignore: ".gitignore", "_env.example": ".env.example" };

/**
 * Writes a new ESM TypeScript Patchbay project: a server with one agent, a dispatch worker with
 * one tool, a page, `.env.example`, and its own `npm start` and `npm test`. It installs nothing
 * (the CLI runs `npm install` afterwards).
 *
 * @example
 * ```ts
 * scaffold({ dir: "my-agent", from: "/src/patchbay/dist-packages" });
 * ```
 */
export function scaffold(options: ScaffoldOptions): ScaffoldResult {
  const dir = resolve(options.dir);
  const name = options.name ?? basename(dir);
  if (!/^(?:@[a-z0-9-~][a-z0-9-._~]*\/)?[a-z0-9-~][a-z0-9-._~]*$/.test(name) || name.length > 214) {
    throw new ScaffoldError(
      "bad_name",
      `'${name}' is not a valid npm package name (lowercase letters, digits, '-', '.', '_'); pass --name`,
    );
  }
  if (existsSync(dir) && (!statSync(dir).isDirectory() || readdirSync(dir).length > 0)) {
    throw new ScaffoldError("target_not_empty", `${dir} already exists and is not an empty folder`);
  }
  const patchbay =
    options.from === undefined ? fromRegistry(options.version) : fromTarballs(options.from, dir);

  mkdirSync(dir, { recursive: true });
  const files = copyTemplate(TEMPLATE_DIR, dir);
  writeFileSync(
    join(dir, "package.json"),
    `${JSON.stringify(packageJson(name, patchbay, options), null, 2)}\n`,
  );
  files.push("package.json");
  if (options.from !== undefined) files.push(...Object.values(patchbay).map((spec) => spec.slice(5)));
  return { dir, name, files: files.sort(), patchbay };
}

function fromRegistry(version = `^${OWN_VERSION}`): Record<string, string> {
  return Object.fromEntries(PATCHBAY_PACKAGES.map((p) => [`@patchbay/${p}`, version]));
}

/** Copies `patchbay-<name>-<version>.tgz` for each package into the project; each is required. */
function fromTarballs(from: string, dir: string): Record<string, string> {
  const source = resolve(from);
  if (!existsSync(source) || !statSync(source).isDirectory()) {
    throw new ScaffoldError(
      "from_missing",
      `--from ${from}: no such folder (run \`npm run pack\` in the Patchbay repository to make dist-packages/)`,
    );
  }
  const tarballs = readdirSync(source).filter((file) => file.endsWith(".tgz"));
  const specs: Record<string, string> = {};
  const missing: string[] = [];
  const newest = (p: string) =>
    tarballs
      .filter((t) => new RegExp(`^patchbay-${p}-\\d+\\.\\d+\\.\\d+.*\\.tgz$`).test(t))
      .sort()
      .pop();
  for (const p of PATCHBAY_PACKAGES) {
    const file = newest(p);
    if (file === undefined) missing.push(`@patchbay/${p}`);
    else specs[`@patchbay/${p}`] = `file:${VENDOR_DIR}/${file}`;
  }
  for (const p of OPTIONAL_PACKAGES) {
    const file = newest(p);
    if (file !== undefined) specs[`@patchbay/${p}`] = `file:${VENDOR_DIR}/${file}`;
  }
  if (missing.length > 0) {
    throw new ScaffoldError(
      "from_incomplete",
      `--from ${from}: no tarball for ${missing.join(", ")} (expected patchbay-<name>-<version>.tgz, as \`npm run pack\` writes them)`,
    );
  }
  mkdirSync(join(dir, VENDOR_DIR), { recursive: true });
  for (const spec of Object.values(specs)) {
    copyFileSync(join(source, basename(spec)), join(dir, spec.slice(5)));
  }
  return specs;
}

function packageJson(name: string, patchbay: Record<string, string>, options: ScaffoldOptions) {
  const pick = (...names: string[]) => Object.fromEntries(names.map((n) => [n, patchbay[n]!]));
  return {
    name,
    version: "0.1.0",
    private: true,
    type: "module",
    engines: { node: ">=20.12" },
    scripts: {
      start: "tsx src/main.ts",
      test: "tsc --noEmit && tsx --test test/*.test.ts",
      typecheck: "tsc --noEmit",
    },
    dependencies: {
      // The guides import from @patchbay/tools too (types, ToolError): a dependency, not a hoisted accident.
      ...pick(
        "@patchbay/server",
        "@patchbay/client",
        "@patchbay/dispatch",
        "@patchbay/models",
        "@patchbay/tools",
      ),
      zod: "^4.1.0",
    },
    devDependencies: {
      "@types/node": "^20.19.0",
      esbuild: "~0.28.0",
      tsx: "^4.20.0",
      typescript: "~5.9.3",
    },
    // The packages depend on each other; from tarballs, each must come from its tarball too.
    ...(options.from === undefined ? {} : { overrides: patchbay }),
  };
}

function copyTemplate(from: string, to: string, prefix = ""): string[] {
  const written: string[] = [];
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const target = RENAMED[entry.name] ?? entry.name;
    if (entry.isDirectory()) {
      mkdirSync(join(to, target), { recursive: true });
      written.push(...copyTemplate(join(from, entry.name), join(to, target), join(prefix, target)));
    } else {
      copyFileSync(join(from, entry.name), join(to, target));
      written.push(join(prefix, target));
    }
  }
  return written;
}

/** The project folder as the user typed it, for the "next steps" lines. */
export function displayPath(dir: string, cwd = process.cwd()): string {
  const rel = relative(cwd, dir);
  return rel === "" ? "." : rel.startsWith("..") ? dir : rel;
}
