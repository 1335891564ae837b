// ESM + CJS with declarations for both; the recipe is shared by every package. The CLI is a
// second entry: `dist/cli.js` is what the `patchbay` bin (bin/patchbay.js, checked in) runs.
import { packageConfig } from "../../configs/tsup";

export default packageConfig({
  entry: ["src/index.ts", "src/cli.ts"],
  bundleEsmOnly: ["nanoid", "jose"],
  platform: "node",
});
