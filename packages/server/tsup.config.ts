// ESM + CJS with declarations for both; the recipe is shared by every package. The CLI is a
// second entry so `dist/cli.js` is the package's `patchbay` bin.
import { packageConfig } from "../../configs/tsup";

export default packageConfig({
  entry: ["src/index.ts", "src/cli.ts"],
  bundleEsmOnly: ["nanoid", "jose"],
  platform: "node",
});
