// A frame nested deeper than `maxJsonDepth` is refused by decodeFrame after JSON.parse, and
// parsing 3,000 levels takes V8 about 1.5 ms (then the error's ids took a second parse): an
// attacker's stream of them held the event loop for most of its time. This scan of the bytes
// finds such a frame first, for a fraction of that, and answers as decodeFrame would (the same
// message and path, the top-level ids to correlate the error with). decodeFrame stays the rule;
// this only refuses earlier what it would refuse.

const OPEN_OBJECT = 0x7b; // {
const CLOSE_OBJECT = 0x7d; // }
const OPEN_ARRAY = 0x5b; // [
const CLOSE_ARRAY = 0x5d; // ]
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;

const ID_KEYS = new Set(["requestId", "commandId", "sessionId"]);

/** A frame nested too deep: decodeFrame's message and path, and the ids found on its top level. */
export interface TooDeep {
  message: string;
  path: string;
  ids: { requestId?: string; commandId?: string; sessionId?: string };
}

/** Whether `buffer` holds more than `count` bytes that open an object or array (native scans). */
function moreOpeningsThan(buffer: Buffer, count: number): boolean {
  let seen = 0;
  for (const byte of [OPEN_OBJECT, OPEN_ARRAY]) {
    for (let at = buffer.indexOf(byte); at !== -1; at = buffer.indexOf(byte, at + 1)) {
      if (++seen > count) return true;
    }
  }
  return false;
}

/** The end of the string whose opening quote is at `start` (the index of its closing quote). */
function stringEnd(buffer: Buffer, start: number): number {
  for (let at = buffer.indexOf(QUOTE, start + 1); at !== -1; at = buffer.indexOf(QUOTE, at + 1)) {
    let slashes = 0;
    while (buffer[at - 1 - slashes] === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return at;
  }
  return -1;
}

function stringAt(buffer: Buffer, start: number, end: number): string | undefined {
  try {
    const value: unknown = JSON.parse(buffer.toString("utf8", start, end + 1));
    return typeof value === "string" ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The refusal of a frame nested deeper than `maxDepth` objects and arrays, or `undefined` when
 * it is not (or is not JSON enough to tell: decodeFrame then answers it).
 */
export function tooDeep(buffer: Buffer, maxDepth: number): TooDeep | undefined {
  // A frame cannot nest deeper than the number of containers it opens.
  if (!moreOpeningsThan(buffer, maxDepth)) return undefined;
  // One entry per open container: the key (or index) of its child being read.
  const keys: (string | number)[] = [];
  const arrays: boolean[] = [];
  const ids: TooDeep["ids"] = {};
  let lastKey: string | undefined;
  let afterColon = false;
  for (let at = 0; at < buffer.length; at++) {
    const byte = buffer[at];
    if (byte === QUOTE) {
      const end = stringEnd(buffer, at);
      if (end === -1) return undefined;
      const depth = keys.length;
      // Keys are read where a path may need them (the first levels) or an id may be (the top).
      if (depth >= 1 && depth <= 8 && !arrays[depth - 1]) {
        if (afterColon) {
          const value =
            depth === 1 && lastKey && ID_KEYS.has(lastKey) ? stringAt(buffer, at, end) : undefined;
          if (value !== undefined && value.length > 0 && value.length <= 256)
            ids[lastKey as keyof TooDeep["ids"]] = value;
        } else {
          lastKey = stringAt(buffer, at, end);
        }
      }
      afterColon = false;
      at = end;
    } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
      if (keys.length >= maxDepth) {
        const path = keys.slice(0, 8).map(String).join(".");
        const shown = path + (keys.length > 8 ? ".…" : "");
        return { message: `${shown}: nested deeper than ${maxDepth} levels`, path, ids };
      }
      keys.push(byte === OPEN_ARRAY ? 0 : "");
      arrays.push(byte === OPEN_ARRAY);
      afterColon = false;
    } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
      keys.pop();
      arrays.pop();
      afterColon = false;
    } else if (byte === COLON) {
      if (keys.length > 0) keys[keys.length - 1] = lastKey ?? "";
      afterColon = true;
    } else if (byte === COMMA) {
      const last = keys.length - 1;
      if (last >= 0 && arrays[last]) keys[last] = (keys[last] as number) + 1;
      afterColon = false;
    }
  }
  return undefined;
}
