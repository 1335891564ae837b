export type { ScaffoldErrorCode, ScaffoldOptions, ScaffoldResult } from "./scaffold";
export { displayPath, ScaffoldError, scaffold, VENDOR_DIR } from "./scaffold";
export { suggestFlag } from "./suggest-flag";
