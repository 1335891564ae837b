/** The part of a V8 call frame (CPU and heap profiles alike) that names where code is. */
export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

/**
 * How the profile readers name a frame: the function and its file from the package or bench
 * folder on, with its line (`send packages/server/dist/chunk.js:2744`).
 */
export function frameName(frame: CallFrame): string {
  const where = frame.url
    ? `${frame.url.replace(/^.*\/(node_modules|packages|bench)\//, "$1/")}:${frame.lineNumber + 1}`
    : "";
  return `${frame.functionName || "(anonymous)"} ${where}`.trim();
}
