// What turn-hops.ts and hosted-hops.ts do with the marks hop-marks.ts takes: ask a peer process
// for its marks, group the marks of all processes by the call (or turn) they fall in, and print
// the most common sequence with the median time of each mark.
import type { Peer } from "../children";
import type { HopMark } from "./hop-marks";

/** A mark of any process, labelled with where it was taken. */
export interface LabelledMark {
  label: string;
  ns: number;
}

/** Sends a peer running hop-marks.ts a command (`on`, `off`, `take`) and resolves with its reply's marks. */
export function askPeerMarks(peer: Peer<unknown>, command: "on" | "off" | "take"): Promise<HopMark[]> {
  return new Promise<HopMark[]>((resolve) => {
    const onMessage = (message: { hopMarksReply?: string; marks?: HopMark[] }) => {
      if (message?.hopMarksReply !== command) return;
      peer.child.off("message", onMessage);
      resolve(message.marks ?? []);
    };
    peer.child.on("message", onMessage);
    peer.child.send({ hopMarks: command });
  });
}

/** Starts a peer's V8 sampler (every `arg` µs), or stops it and writes its profile to `arg` (hop-marks.ts's `hopProfile`). */
export function askPeerProfile(
  peer: Peer<unknown>,
  command: "start" | "stop",
  arg: number | string,
): Promise<void> {
  return new Promise<void>((resolve) => {
    const onMessage = (message: { hopProfileReply?: string }) => {
      if (message?.hopProfileReply !== command) return;
      peer.child.off("message", onMessage);
      resolve();
    };
    peer.child.on("message", onMessage);
    peer.child.send({ hopProfile: command, arg });
  });
}

/**
 * The marks between each `start` and `end` mark (sorted by time), grouped by their sequence of
 * labels (the key, ending in `endName`); each row holds every mark's µs since its `start`.
 */
export function markSequences(
  marks: readonly LabelledMark[],
  start: string,
  end: string,
  endName: string,
): Map<string, number[][]> {
  const sequences = new Map<string, number[][]>();
  let current: LabelledMark[] | undefined;
  let t0 = 0;
  for (const m of marks) {
    if (m.label === start) {
      current = [];
      t0 = m.ns;
    } else if (m.label === end && current) {
      const key = [...current.map((x) => x.label), endName].join("|");
      const rows = sequences.get(key) ?? [];
      rows.push([...current.map((x) => (x.ns - t0) / 1000), (m.ns - t0) / 1000]);
      sequences.set(key, rows);
      current = undefined;
    } else current?.push(m);
  }
  return sequences;
}

/** The sequences by how many rows each has, most first, and the median of every row's last mark (µs). */
export function rankSequences(sequences: Map<string, number[][]>): {
  ranked: [string, number[][]][];
  p50Us: number;
} {
  const ranked = [...sequences].sort((x, y) => y[1].length - x[1].length);
  const ends = ranked.flatMap(([, rows]) => rows.map((r) => r[r.length - 1]!)).sort((a, b) => a - b);
  return { ranked, p50Us: ends[ends.length >> 1] ?? Number.NaN };
}

/** Prints a sequence's marks, each with its median µs since the start and the step from the one before. */
export function printSequence(key: string, rows: number[][], width: number): void {
  let before = 0;
  for (const [i, label] of key.split("|").entries()) {
    const at = rows.map((r) => r[i]!).sort((x, y) => x - y)[rows.length >> 1]!;
    console.log(`  ${label.padEnd(width)} ${at.toFixed(1).padStart(8)}  (+${(at - before).toFixed(1)})`);
    before = at;
  }
}
