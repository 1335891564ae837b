// ESM + CJS with declarations for both; the recipe is shared by every package.
import { packageConfig } from "../../configs/tsup";

export default packageConfig({});
