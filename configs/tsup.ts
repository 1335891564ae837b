import { defineConfig, type Options } from "tsup";

/**
 * The one build recipe every published Patchbay package uses: ESM (`.js`) and CJS (`.cjs`)
 * side by side, each with its own declarations (`.d.ts` / `.d.cts`) so that the exports map can
 * name `types` first for both module systems.
 *
 * `bundleEsmOnly` lists dependencies that ship ESM only (nanoid 5, jose 6). They are inlined
 * into the CJS build so `require("@patchbay/x")` works on every Node 20 minor, including the
 * ones without `require(esm)`. The ESM build keeps them external.
 */
export function packageConfig(
  options: { entry?: Options["entry"]; bundleEsmOnly?: string[]; platform?: Options["platform"] } = {},
) {
  const entry = options.entry ?? ["src/index.ts"];
  const shared: Options = {
    entry,
    sourcemap: true,
    target: "es2022",
    platform: options.platform ?? "neutral",
    dts: true,
    treeshake: true,
  };
  return defineConfig([
    { ...shared, format: ["esm"], clean: true },
    { ...shared, format: ["cjs"], noExternal: options.bundleEsmOnly ?? [] },
  ]);
}
