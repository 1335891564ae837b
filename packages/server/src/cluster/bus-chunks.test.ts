import { describe, expect, it } from "vitest";
import { ChunkAssembler, isChunk, splitMessage } from "./bus-chunks";

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (data: Uint8Array | undefined) => (data ? new TextDecoder().decode(data) : undefined);

describe("splitMessage and ChunkAssembler", () => {
  it("leaves a message that fits alone, and splits a larger one into chunks no larger than the limit", () => {
    expect(splitMessage(bytes("x".repeat(200)), 200)).toBeUndefined();
    const message = bytes(`{"t":"${"é€".repeat(500)}"}`);
    const chunks = splitMessage(message, 200)!;
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) {
      expect(chunk.length).toBeLessThanOrEqual(200);
      expect(isChunk(chunk)).toBe(true);
    }
    expect(isChunk(message)).toBe(false);
    const assembler = new ChunkAssembler();
    const out = chunks.map((chunk) => assembler.accept(chunk));
    expect(out.slice(0, -1).every((part) => part === undefined)).toBe(true);
    expect(text(out.at(-1))).toBe(text(message));
    expect(assembler.pending).toBe(0);
  });

  it("joins messages whose chunks arrive interleaved, and ignores a chunk delivered twice", () => {
    const one = splitMessage(bytes("1".repeat(500)), 100)!;
    const two = splitMessage(bytes("2".repeat(500)), 100)!;
    const assembler = new ChunkAssembler();
    const whole: string[] = [];
    for (let i = 0; i < Math.max(one.length, two.length); i++) {
      for (const chunk of [one[i], two[i], one[i]]) {
        const done = chunk && assembler.accept(chunk);
        if (done) whole.push(text(done)!);
      }
    }
    expect(whole).toEqual(["1".repeat(500), "2".repeat(500)]);
  });

  it("drops a message whose chunks stopped coming (its publisher died), and bounds what it keeps", () => {
    let now = 0;
    const assembler = new ChunkAssembler({ staleAfterMs: 1_000, maxPendingBytes: 300, now: () => now });
    // 164 bytes a chunk leave 100 for the message's bytes.
    const dead = splitMessage(bytes("d".repeat(500)), 164)!;
    expect(dead).toHaveLength(5);
    assembler.accept(dead[0]!);
    expect(assembler.pending).toBe(1);
    now = 1_500;
    const live = splitMessage(bytes("l".repeat(250)), 164)!;
    assembler.accept(live[0]!);
    // The dead publisher's message went when the next chunk came after the stale time.
    expect(assembler.pending).toBe(1);
    // Past 300 bytes waiting, the oldest unfinished message goes, never the one being filled.
    const other = splitMessage(bytes("o".repeat(900)), 164)!;
    for (const chunk of other.slice(0, 8)) assembler.accept(chunk);
    expect(assembler.pending).toBe(1);
    // So `other` still makes a message, and the rest of `live` no longer does.
    expect(text(assembler.accept(other[8]!))).toBe("o".repeat(900));
    expect(assembler.accept(live[1]!)).toBeUndefined();
    expect(assembler.accept(live[2]!)).toBeUndefined();
  });

  it("ignores a chunk whose header is damaged", () => {
    const assembler = new ChunkAssembler();
    expect(assembler.accept(new Uint8Array([1, 120, 10, 65]))).toBeUndefined();
    expect(assembler.accept(bytes("\u0001abc:5:2\nxx"))).toBeUndefined();
    expect(assembler.pending).toBe(0);
  });
});
