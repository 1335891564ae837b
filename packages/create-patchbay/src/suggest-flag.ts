/**
 * The known name closest to `input` by edit distance, when it is close enough to be a typo
 * (at most a third of its length, and at least one edit allowed), else undefined.
 *
 * @example
 * ```ts
 * suggestFlag("form", ["from", "name"]); // "from"
 * ```
 */
export function suggestFlag(input: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(1, Math.floor(input.length / 3));
  for (const candidate of known) {
    const distance = editDistance(input.toLowerCase(), candidate.toLowerCase());
    if (distance <= bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
    if (candidate.startsWith(input) && input.length >= 3 && best === undefined) best = candidate;
  }
  return best;
}

/** Damerau-Levenshtein (optimal string alignment): a swap of two letters counts once. */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        value = Math.min(value, rows[i - 2]![j - 2]! + 1);
      }
      rows[i]![j] = value;
    }
  }
  return rows[a.length]![b.length]!;
}
