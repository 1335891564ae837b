import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// Tests import every @patchbay package from its source, so a test run never reads a stale build.
const packages = ["protocol", "tools", "models", "server", "client", "dispatch", "connectors"];
// Absolute, so a run started from a package directory (`pnpm test` there) finds the same files.
const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const alias = {
  // Subpath entries first: a bare package name also matches its subpaths.
  "@patchbay/protocol/lite": here("./packages/protocol/src/lite.ts"),
  "@patchbay/protocol/runtime": here("./packages/protocol/src/runtime.ts"),
  ...Object.fromEntries(
    packages.map((name) => [`@patchbay/${name}`, here(`./packages/${name}/src/index.ts`)]),
  ),
};

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
      {
        extends: true,
        test: {
          name: "create-patchbay",
          root: here("./packages/create-patchbay"),
          include: ["src/**/*.test.ts"],
        },
      },
      // React bindings: components and hooks in happy-dom, against a real server on loopback.
      {
        extends: true,
        test: {
          name: "react",
          root: here("./packages/react"),
          include: ["src/**/*.test.ts", "src/**/*.test.tsx"],
          environment: "happy-dom",
          // The tests' server is on another port of 127.0.0.1, and sends no CORS headers.
          environmentOptions: { happyDOM: { settings: { fetch: { disableSameOriginPolicy: true } } } },
        },
      },
      // Every code sample of docs/ and the package READMEs, run against a real server.
      { extends: true, test: { name: "docs", root: here("./docs"), include: ["test/**/*.test.ts"] } },
      // The benchmark harness's smoke test (a --quick run; no timing is asserted).
      { extends: true, test: { name: "bench", root: here("./bench"), include: ["src/**/*.test.ts"] } },
    ],
    testTimeout: 20_000,
    hookTimeout: 60_000,
  },
});
