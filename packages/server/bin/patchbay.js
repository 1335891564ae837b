#!/usr/bin/env node
// The `patchbay` bin. This file is checked in so package managers can link the bin in a fresh
// clone before anything is built (they cannot link a file that does not exist yet, and warn for
// every workspace that depends on the server); the CLI itself is the build output, dist/cli.js.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const cli = new URL("../dist/cli.js", import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write(
    `patchbay: the server is not built yet (${fileURLToPath(cli)} is missing). ` +
      "Run `pnpm build` (or `pnpm --filter @patchbay/server build`) first.\n",
  );
  process.exit(1);
}
await import(cli.href);
