import { USER_TOKEN_AUDIENCE } from "@patchbay/protocol/lite";
import { jwtVerify } from "jose";
import { describe, expect, it } from "vitest";
import { createUserToken, tokenExpiresAt } from "./user-token";

const secret = "s3cret-ünïcode";
const key = new TextEncoder().encode(secret);

describe("createUserToken", () => {
  it("signs HS256 with the secret's UTF-8 bytes and the agreed claims", async () => {
    const token = await createUserToken(secret, "user_42", { name: "Ada" });
    const { payload, protectedHeader } = await jwtVerify(token, key, { audience: USER_TOKEN_AUDIENCE });
    expect(protectedHeader.alg).toBe("HS256");
    expect(payload.sub).toBe("user_42");
    expect(payload.name).toBe("Ada");
    expect(payload.exp! - payload.iat!).toBe(3600);
  });

  it("reads a number as seconds from now and a string as a jose time span", async () => {
    const numeric = await jwtVerify(await createUserToken(secret, "u", { expiresIn: 90 }), key);
    expect(numeric.payload.exp! - numeric.payload.iat!).toBe(90);
    const span = await jwtVerify(await createUserToken(secret, "u", { expiresIn: "15m" }), key);
    expect(span.payload.exp! - span.payload.iat!).toBe(900);
  });

  it("is refused by a verifier holding another secret", async () => {
    const token = await createUserToken(secret, "u");
    await expect(jwtVerify(token, new TextEncoder().encode("other"))).rejects.toThrow(/signature/);
  });

  it("refuses to mint without a secret or a user", async () => {
    await expect(createUserToken("", "u")).rejects.toThrow(TypeError);
    await expect(createUserToken(secret, "")).rejects.toThrow(TypeError);
  });
});

describe("tokenExpiresAt", () => {
  it("reads exp in milliseconds", async () => {
    const before = Date.now();
    const token = await createUserToken(secret, "u", { expiresIn: 60 });
    const expires = tokenExpiresAt(token)!;
    expect(expires).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 60_000);
    expect(expires).toBeLessThanOrEqual(before + 61_000);
  });

  it("gives undefined for text that is not a JWT", () => {
    expect(tokenExpiresAt("opaque")).toBeUndefined();
    expect(tokenExpiresAt("a.!!!.c")).toBeUndefined();
  });
});
