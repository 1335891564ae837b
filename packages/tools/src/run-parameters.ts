/** All of `run`'s arguments: `args`, `signal`, `ctx`. */
export const ALL_RUN_ARGUMENTS = 3;

const read = new WeakMap<object, number>();

/**
 * How many of `run`'s arguments (`args`, `signal`, `ctx`) the function can see: the parameters
 * its source declares, or all three whenever it might see more than it declares. Decided once per
 * function. A real `AbortSignal` takes microseconds to make on Node 20 and drags the call's
 * objects out of the young generation with it, and most tools declare only their arguments.
 *
 * Only a parameter list this reads whole counts: plain names and destructuring patterns
 * (`{ a, b: c }`, `[a, b]`), nothing else. A default value (`signal = fallback`), a rest
 * parameter (`...rest`), a comment, a string, any character it does not expect, a source that
 * mentions `arguments` or `eval` anywhere, a function with an own `arguments` property (a sloppy
 * one, whose arguments other code can read), and a bound, native or proxied function (whose
 * source is hidden) all count as reading everything. A minifier only drops parameters nobody
 * reads, so what it leaves is read the same way.
 *
 * The `length` of a function is not enough: `(args, signal = fallback)` and `(args, ...rest)`
 * both have length 1 and still see the signal.
 */
export function runArgumentsRead(run: (...args: never[]) => unknown): number {
  let count = read.get(run);
  if (count === undefined) {
    count = countParameters(run);
    read.set(run, count);
  }
  return count;
}

// What may come before a parameter list's "(": `async`, `function`, `*`, a name (a function's or
// a method's). An arrow function's single bare parameter is matched by BARE_PARAMETER.
const HEAD = /^(?:async\s*)?(?:function\s*\*?\s*[\w$]*\s*|\*?\s*[\w$]+\s*)?\(/;
const BARE_PARAMETER = /^(?:async\s+)?[\w$]+\s*=>/;
const SEES_MORE = /\barguments\b|\beval\b|\[native code\]/;
const NAME_CHAR = /[\w$:]/;

function countParameters(run: (...args: never[]) => unknown): number {
  let source: string;
  try {
    if (Object.hasOwn(run, "arguments")) return ALL_RUN_ARGUMENTS;
    source = Function.prototype.toString.call(run);
  } catch {
    return ALL_RUN_ARGUMENTS;
  }
  if (SEES_MORE.test(source)) return ALL_RUN_ARGUMENTS;
  if (BARE_PARAMETER.test(source)) return 1;
  const head = HEAD.exec(source);
  if (head === null) return ALL_RUN_ARGUMENTS;
  let depth = 0;
  let count = 0;
  let named = false;
  for (let i = head[0].length; i < source.length; i++) {
    const char = source[i]!;
    if (char === ")") {
      if (depth !== 0) return ALL_RUN_ARGUMENTS;
      if (named) count++;
      return Math.min(count, ALL_RUN_ARGUMENTS);
    }
    if (char === "{" || char === "[") {
      depth++;
      named = true;
    } else if (char === "}" || char === "]") {
      if (--depth < 0) return ALL_RUN_ARGUMENTS;
    } else if (char === ",") {
      if (depth === 0) {
        if (!named) return ALL_RUN_ARGUMENTS;
        count++;
        named = false;
      }
    } else if (NAME_CHAR.test(char)) {
      named = true;
    } else if (char !== " " && char !== "\t" && char !== "\n" && char !== "\r") {
      return ALL_RUN_ARGUMENTS;
    }
  }
  return ALL_RUN_ARGUMENTS;
}
