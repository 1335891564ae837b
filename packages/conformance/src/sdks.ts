// The worker SDKs in this repository and the command that runs each one's conformance worker.
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const repo = join(import.meta.dirname, "..", "..", "..");
// tsx compiles the TypeScript worker; resolved from this package so any working directory works.
const tsx = pathToFileURL(createRequire(join(import.meta.dirname, "..", "package.json")).resolve("tsx")).href;

/** One SDK's conformance worker. */
export interface SdkWorker {
  name: string;
  command: string[];
}

/** Every worker SDK in the repository. Python is Debian's (python3-websockets is installed there). */
export const SDK_WORKERS: readonly SdkWorker[] = [
  {
    name: "typescript (@patchbay/dispatch)",
    command: [
      process.execPath,
      "--import",
      tsx,
      join(repo, "packages", "conformance", "workers", "typescript-worker.ts"),
    ],
  },
  {
    name: "python (sdks/python)",
    command: [
      process.env.PATCHBAY_PYTHON ?? "/usr/bin/python3",
      join(repo, "sdks", "python", "examples", "conformance_worker.py"),
    ],
  },
];
