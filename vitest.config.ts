import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// Tests import every @patchbay package from its source, so a test run never reads a stale build.
const packages = ["protocol", "tools", "models", "server", "client", "dispatch"];
// Absolute, so a run started from a package directory (`pnpm test` there) finds the same files.
const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const alias = Object.fromEntries(
  packages.map((name) => [`@patchbay/${name}`, here(`./packages/${name}/src/index.ts`)]),
);

export default defineConfig({
  resolve: { alias },
  test: {
    // One project per workspace package; each finds the *.test.ts files beside its code.
    projects: [
      ...[...packages, "e2e", "conformance"].map((name) => ({
        extends: true,
        test: {
          name,
          root: here(`./packages/${name}`),
          include: ["src/**/*.test.ts", "test/**/*.test.ts"],
        },
      })),
      // The benchmark harness's smoke test (a --quick run; no timing is asserted).
      { extends: true, test: { name: "bench", root: here("./bench"), include: ["src/**/*.test.ts"] } },
    ],
    testTimeout: 20_000,
    hookTimeout: 60_000,
  },
});
