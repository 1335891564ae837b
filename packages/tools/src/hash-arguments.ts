/**
 * JSON with object keys sorted at every depth, so that two objects with the same content give
 * the same text whatever order their keys were written in. Follows `JSON.stringify` otherwise
 * (`toJSON`, `undefined` properties left out).
 *
 * @example
 * ```ts
 * canonicalJson({ b: 1, a: [{ d: 2, c: 3 }] }); // '{"a":[{"c":3,"d":2}],"b":1}'
 * ```
 */
export function canonicalJson(value: unknown): string {
  return (
    JSON.stringify(value, (_key, v: unknown) => {
      if (v === null || typeof v !== "object" || Array.isArray(v)) return v;
      // fromEntries defines own properties, so a "__proto__" key stays data.
      return Object.fromEntries(
        Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
      );
    }) ?? "null"
  );
}

/**
 * A stable hash of tool arguments: the same arguments in any key order give the same hash. It is
 * synchronous and runs in browsers as well as Node (cyrb53-style mixing over canonical JSON, 64
 * bits as 16 hex digits).
 *
 * It binds an approval to the arguments it was asked for; it is **not** a security boundary.
 * Anyone can compute it, and it is not collision-resistant against an adversary. Authorisation
 * must come from who answered the approval, never from the hash.
 *
 * @example
 * ```ts
 * hashArguments({ seats: 2, flight_id: "LH400" }) === hashArguments({ flight_id: "LH400", seats: 2 }); // true
 * ```
 */
export function hashArguments(args: unknown): string {
  const text = canonicalJson(args);
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (h2 >>> 0).toString(16).padStart(8, "0") + (h1 >>> 0).toString(16).padStart(8, "0");
}
