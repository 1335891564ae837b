import { describe, expect, it } from "vitest";
import { MAX_ERROR_TEXT, redactErrorText, secretValues } from "./error-text";

describe("secretValues", () => {
  it("takes string values under secret-looking keys at any depth, not other values", () => {
    expect(
      secretValues({
        user: { id: "u_123456", profile: { name: "Ada Lovelace" }, apiKey: "key_abcdef" },
        services: [{ authorization: "Bearer zzzz" }, { Password: "pw" }],
        session_token: { nested: "tok_nested" },
        tokens: 5,
      }),
    ).toEqual(["key_abcdef", "Bearer zzzz", "tok_nested"]);
  });
});

describe("redactErrorText", () => {
  it("redacts given secrets, longest first, and credentials in common shapes", () => {
    expect(redactErrorText("a abcd abcdef", ["abcd", "abcdef"])).toBe("a [REDACTED] [REDACTED]");
    expect(redactErrorText("Authorization: Basic dXNlcjpwYXNz", [])).toBe("Authorization: Basic [REDACTED]");
    expect(redactErrorText("redis://:s3cret@cache:6379", [])).toBe("redis://:[REDACTED]@cache:6379");
    expect(redactErrorText("nothing to hide at https://example.com/a", [])).toBe(
      "nothing to hide at https://example.com/a",
    );
  });

  it("cuts long text after redacting, without splitting a surrogate pair", () => {
    const text = `${"a".repeat(MAX_ERROR_TEXT - 1)}😀tail`;
    const cut = redactErrorText(text, []);
    expect(cut).toBe(`${"a".repeat(MAX_ERROR_TEXT - 1)}… (6 more characters cut)`);
    const secretAtEdge = `${"b".repeat(MAX_ERROR_TEXT - 3)}topsecret`;
    expect(redactErrorText(secretAtEdge, ["topsecret"])).toBe(
      `${"b".repeat(MAX_ERROR_TEXT - 3)}[RE… (7 more characters cut)`,
    );
  });
});
