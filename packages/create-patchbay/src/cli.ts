#!/usr/bin/env node
// `create-patchbay <folder> [--from <dir>] [--no-install]` (`npm create patchbay -- <folder>`).
import { spawnSync } from "node:child_process";
import { parseArgs } from "node:util";
import { displayPath, ScaffoldError, scaffold } from "./scaffold";
import { suggestFlag } from "./suggest-flag";

const USAGE = `Usage: create-patchbay <folder> [options]

Options:
  --from <dir>     install Patchbay from a folder of tarballs (\`npm run pack\` in the
                   Patchbay repository writes them to dist-packages/) instead of the registry
  --name <name>    the package name (default: the folder's name)
  --no-install     write the files only; run \`npm install\` yourself
  -h, --help       this text
`;
const FLAGS = ["from", "name", "no-install", "help"];

function main(argv: string[]): number {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
      const flag = /'([^']+)'/.exec((error as Error).message)?.[1] ?? "";
      const suggestion = suggestFlag(flag.replace(/^-+/, "").split("=")[0] ?? "", FLAGS);
      return fail(`unknown option '${flag}'${suggestion ? ` (did you mean --${suggestion}?)` : ""}`);
    }
    return fail((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (positionals.length !== 1) {
    return fail(positionals.length === 0 ? "which folder? e.g. create-patchbay my-agent" : "give one folder");
  }
  const result = scaffold({
    dir: positionals[0]!,
    ...(values.from === undefined ? {} : { from: values.from }),
    ...(values.name === undefined ? {} : { name: values.name }),
  });
  const where = displayPath(result.dir);
  process.stdout.write(
    `Created ${result.name} in ${where} (${result.files.length} files; Patchbay from ${
      values.from === undefined ? "the npm registry" : values.from
    }).\n`,
  );
  if (!values["no-install"]) {
    process.stdout.write("Installing with npm...\n");
    const install = spawnSync("npm", ["install"], {
      cwd: result.dir,
      stdio: "inherit",
      shell: process.platform === "win32",
    });
    if (install.status !== 0) {
      return fail(
        `npm install failed in ${where} (exit ${install.status}); fix the cause and run it again there`,
        1,
      );
    }
  }
  process.stdout.write(`
Next:
  cd ${where}${values["no-install"] ? "\n  npm install" : ""}
  npm start     # the server, the worker with your tool, and the page; prints the address
  npm test      # one conversation through the client, checked

Your tool is src/tools.ts; the agent is agents/assistant.yaml; copy .env.example to .env for a real model.
`);
  return 0;
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      from: { type: "string" },
      name: { type: "string" },
      "no-install": { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
}

function fail(message: string, code = 2): number {
  process.stderr.write(`create-patchbay: ${message}\n(create-patchbay --help lists the options)\n`);
  return code;
}

try {
  process.exitCode = main(process.argv.slice(2));
} catch (error) {
  if (error instanceof ScaffoldError) {
    process.exitCode = fail(error.message);
  } else {
    throw error;
  }
}
