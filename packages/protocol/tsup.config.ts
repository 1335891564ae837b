// ESM + CJS with declarations for both; the recipe is shared by every package. Two entries: the
// whole protocol (zod schemas included) and `lite`, what a browser page needs without zod.
import { packageConfig } from "../../configs/tsup";

export default packageConfig({ entry: ["src/index.ts", "src/lite.ts"] });
