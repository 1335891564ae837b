import { describe, expect, it } from "vitest";
import { cutText } from "./cut-text";
import { interpolateEnv, redactSecrets, referencesEnv } from "./interpolate";

describe("interpolateEnv", () => {
  it("fills ${VAR} in nested strings, keeps $$ as $, and leaves the input unchanged", () => {
    const input = {
      headers: { authorization: "Bearer ${TOKEN}" },
      args: ["--price=$$5", "${HOME_DIR}/x"],
      n: 3,
    };
    const { value, issues, secrets } = interpolateEnv(input, { TOKEN: "s3cret", HOME_DIR: "/home/a" });
    expect(issues).toEqual([]);
    expect(secrets).toEqual(["s3cret", "/home/a"]);
    expect(value).toEqual({
      headers: { authorization: "Bearer s3cret" },
      args: ["--price=$5", "/home/a/x"],
      n: 3,
    });
    expect(input.headers.authorization).toBe("Bearer ${TOKEN}");
  });

  it("names each unset variable at its path", () => {
    const { issues } = interpolateEnv(
      { env: { KEY: "${MISSING_KEY}" }, args: ["ok", "${ALSO_MISSING}"] },
      {},
      [0, "mcp"],
    );
    expect(issues).toEqual([
      { path: [0, "mcp", "env", "KEY"], message: "${MISSING_KEY} is not set in the environment" },
      { path: [0, "mcp", "args", 1], message: "${ALSO_MISSING} is not set in the environment" },
    ]);
  });

  it("says whether a config references the environment", () => {
    expect(referencesEnv({ a: ["x", { b: "${Y}" }] })).toBe(true);
    expect(referencesEnv({ a: ["x", { b: "$Y" }] })).toBe(false);
  });

  it("blanks a secret as written, escaped in JSON, encoded in a URL, and its start where a response was cut", () => {
    const key = 'tok"en/ab+c=<&>';
    expect(redactSecrets(`raw ${key}`, [key])).toBe("raw ***");
    expect(redactSecrets(JSON.stringify({ k: key }), [key])).toBe('{"k":"***"}');
    expect(redactSecrets(`https://x.test/?key=${encodeURIComponent(key)}&q=1`, [key])).toBe(
      "https://x.test/?key=***&q=1",
    );
    const live = "sk_live_51Hq8TzAbCdEfGhIjKlMnOpQrStUv";
    const echoed = `${"x".repeat(90)}"k":"${live}"}`;
    const cut = cutText(echoed, 90 + 6 + 35);
    expect(cut).toContain("sk_live_51Hq8TzAbCdEfGhIjKlMnOpQrStU\n[cut:");
    expect(redactSecrets(cut, [live])).toBe(
      `${"x".repeat(90)}"k":"***\n[cut: the response had ${echoed.length} characters]`,
    );
    // Text that only looks like the start of a secret elsewhere is left alone.
    expect(redactSecrets("sk_live_ and more", [live])).toBe("sk_live_ and more");
  });
});
