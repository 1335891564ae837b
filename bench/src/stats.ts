// Summary statistics and number formatting for the table. Percentiles use the nearest-rank
// method on sorted samples, which needs no interpolation and is what most latency tools print.

/** Nearest-rank percentile (p in 0..100) of samples; NaN when there are none. */
export function percentile(sorted: Float64Array | number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export interface LatencySummary {
  /** Microseconds. */
  p50: number;
  p99: number;
  samples: number;
}

/** p50 and p99 of latencies given in microseconds. */
export function summarize(samples: number[]): LatencySummary {
  const sorted = Float64Array.from(samples).sort();
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), samples: sorted.length };
}

/** The median of a few block figures (throughput of interleaved blocks). */
export function median(values: number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** 61 µs, 1.52 ms, 2.1 s: three significant figures at most. */
export function formatMicros(us: number): string {
  if (!Number.isFinite(us)) return "n/a";
  if (us < 1) return `${us.toFixed(2)} µs`;
  if (us < 1_000) return `${us < 10 ? us.toFixed(1) : us.toFixed(0)} µs`;
  if (us < 1_000_000) return `${(us / 1_000).toFixed(us < 10_000 ? 2 : 1)} ms`;
  return `${(us / 1_000_000).toFixed(2)} s`;
}

/** 48,900 /s */
export function formatRate(perSecond: number): string {
  if (!Number.isFinite(perSecond)) return "n/a";
  return `${Math.round(perSecond).toLocaleString("en-US")} /s`;
}

/** 3.2 KiB, 1.05 MiB */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes)) return "n/a";
  if (Math.abs(bytes) < 1024) return `${Math.round(bytes)} B`;
  if (Math.abs(bytes) < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(2)} MiB`;
}

/** 1.42x */
export function formatRatio(ratio: number): string {
  if (!Number.isFinite(ratio)) return "n/a";
  return `${ratio < 10 ? ratio.toFixed(2) : ratio.toFixed(1)}x`;
}
