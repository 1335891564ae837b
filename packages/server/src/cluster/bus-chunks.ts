// A message larger than the bus's largest (NATS' `max_payload`, 1 MiB by default) travels as
// several: each chunk is a marker byte, a header line `<id>:<index>:<count>\n` and a slice of the
// message's bytes. Cluster messages are JSON text, which never starts with the marker, so a
// message that fits goes as it is and costs nothing more. NATS keeps one publisher's messages on
// one subject in order, and every chunk of a message goes to the same subject, so a receiver
// joins the chunks of an id as they come; chunks of other messages may come in between.

const MARK = 0x01;
const NEWLINE = 0x0a;
/** Room kept in each chunk for the marker and the header line. */
const HEADER_ROOM = 64;

/** The largest message the bus carries in chunks (Patchbay's own frames stay far below it). */
export const MAX_CHUNKED_BYTES = 64 * 1024 * 1024;

const encoder = new TextEncoder();
const prefix = Math.random().toString(36).slice(2, 10);
let sequence = 0;

/** Whether a payload is a chunk of a larger message. */
export function isChunk(bytes: Uint8Array): boolean {
  return bytes.length > 0 && bytes[0] === MARK;
}

/**
 * The chunks to publish for `bytes`, each at most `maxPayload` bytes, or `undefined` when the
 * message fits in one.
 */
export function splitMessage(bytes: Uint8Array, maxPayload: number): Uint8Array[] | undefined {
  if (bytes.length <= maxPayload) return undefined;
  const room = maxPayload - HEADER_ROOM;
  if (room < 1) throw new RangeError(`a bus with max_payload ${maxPayload} cannot carry chunks`);
  const count = Math.ceil(bytes.length / room);
  const id = `${prefix}${(++sequence).toString(36)}`;
  const chunks: Uint8Array[] = [];
  for (let index = 0; index < count; index++) {
    const header = encoder.encode(`${id}:${index}:${count}\n`);
    const body = bytes.subarray(index * room, Math.min(bytes.length, (index + 1) * room));
    const chunk = new Uint8Array(1 + header.length + body.length);
    chunk[0] = MARK;
    chunk.set(header, 1);
    chunk.set(body, 1 + header.length);
    chunks.push(chunk);
  }
  return chunks;
}

interface Partial {
  parts: (Uint8Array | undefined)[];
  received: number;
  bytes: number;
  startedAt: number;
}

/** Options of {@link ChunkAssembler}. */
export interface ChunkAssemblerOptions {
  /** A message whose chunks stop coming (its publisher died) is dropped after this long (default 30 s). */
  staleAfterMs?: number;
  /** The most bytes of unfinished messages kept; past it the oldest are dropped (default 64 MiB). */
  maxPendingBytes?: number;
  now?: () => number;
}

/** Joins the chunks that arrive on one subscription back into whole messages. */
export class ChunkAssembler {
  private readonly partials = new Map<string, Partial>();
  private pendingBytes = 0;
  private readonly staleAfterMs: number;
  private readonly maxPendingBytes: number;
  private readonly now: () => number;

  constructor(options: ChunkAssemblerOptions = {}) {
    this.staleAfterMs = options.staleAfterMs ?? 30_000;
    this.maxPendingBytes = options.maxPendingBytes ?? MAX_CHUNKED_BYTES;
    this.now = options.now ?? Date.now;
  }

  /** Messages waiting for more chunks. */
  get pending(): number {
    return this.partials.size;
  }

  /** Takes a chunk; returns the whole message once its last chunk came, else `undefined`. */
  accept(chunk: Uint8Array): Uint8Array | undefined {
    const end = chunk.indexOf(NEWLINE);
    const header = end > 0 ? new TextDecoder().decode(chunk.subarray(1, end)).split(":") : [];
    const [id, indexText, countText] = header;
    const index = Number(indexText);
    const count = Number(countText);
    if (!id || !Number.isInteger(index) || !Number.isInteger(count) || index < 0 || index >= count) {
      return undefined;
    }
    const body = chunk.subarray(end + 1);
    const now = this.now();
    this.dropStale(now);
    let partial = this.partials.get(id);
    if (!partial) {
      partial = { parts: new Array(count), received: 0, bytes: 0, startedAt: now };
      this.partials.set(id, partial);
    }
    if (partial.parts.length !== count || partial.parts[index] !== undefined) return undefined;
    partial.parts[index] = body;
    partial.received += 1;
    partial.bytes += body.length;
    this.pendingBytes += body.length;
    if (partial.received < count) {
      this.dropOverLimit(id);
      return undefined;
    }
    this.forget(id, partial);
    const whole = new Uint8Array(partial.bytes);
    let offset = 0;
    for (const part of partial.parts as Uint8Array[]) {
      whole.set(part, offset);
      offset += part.length;
    }
    return whole;
  }

  private forget(id: string, partial: Partial): void {
    this.partials.delete(id);
    this.pendingBytes -= partial.bytes;
  }

  private dropStale(now: number): void {
    for (const [id, partial] of this.partials) {
      if (now - partial.startedAt < this.staleAfterMs) break;
      this.forget(id, partial);
    }
  }

  /** Drops the oldest unfinished messages (never `keep`, the one being filled) past the byte limit. */
  private dropOverLimit(keep: string): void {
    for (const [id, partial] of this.partials) {
      if (this.pendingBytes <= this.maxPendingBytes) return;
      if (id !== keep) this.forget(id, partial);
    }
  }
}
