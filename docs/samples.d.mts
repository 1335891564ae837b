/** One fenced code sample of the documentation (see samples.mjs). */
export interface Sample {
  /** The markdown file, relative to the repository root. */
  file: string;
  /** The line of the opening fence. */
  line: number;
  /** `<file>:<line>`. */
  id: string;
  lang: "ts" | "tsx" | "python" | "sh";
  /** What follows the language on the fence line (`ignore`). */
  info: string;
  code: string;
  mode: "run" | "not run" | "undeclared";
  /** Why a sample is not run. */
  reason: string;
  /** What the test does once the sample ran (`call <tool> <json>`, `channel message`). */
  followUp: string;
  /** What is wrong with an undeclared sample's marker. */
  problem?: string;
}
export const repoRoot: string;
export function documentationFiles(): string[];
export function readSamples(path: string): Sample[];
export function allSamples(): Sample[];
