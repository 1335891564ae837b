// The one table `pnpm bench` prints. It is a Markdown table so a run pastes straight into the
// README or an issue note, and it stays readable in a terminal because columns are padded.

export interface Row {
  /** Stable id, e.g. "1 hosted tool call"; the quick-mode test looks rows up by it. */
  scenario: string;
  /** What is measured, e.g. "latency p50 / p99, 1 in flight". */
  measure: string;
  subject: string;
  /** The baseline's name and figure, e.g. "raw ws: 60 µs / 130 µs". */
  baseline: string;
  /** subject / baseline (for latency p50 and p99 each). */
  ratio: string;
  /** The target for this ratio and whether the run met it, when it has one. */
  target?: string;
}

const COLUMNS: [keyof Row, string][] = [
  ["scenario", "scenario"],
  ["measure", "measure"],
  ["subject", "subject"],
  ["baseline", "baseline"],
  ["ratio", "ratio"],
  ["target", "target"],
];

/** Renders rows as a padded Markdown table. */
export function renderTable(rows: Row[]): string {
  const cells = rows.map((row) => COLUMNS.map(([key]) => (row[key] ?? "").replaceAll("|", "\\|")));
  const widths = COLUMNS.map(([, title], i) => Math.max(title.length, ...cells.map((c) => c[i]!.length)));
  const line = (values: string[]) => `| ${values.map((v, i) => v.padEnd(widths[i]!)).join(" | ")} |`;
  return [
    line(COLUMNS.map(([, title]) => title)),
    `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`,
    ...cells.map(line),
  ].join("\n");
}
