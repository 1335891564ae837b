import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { AuthError } from "../errors";
import { createUserToken, verifyUserToken } from "./user-token";

const secret = "test-secret-0123456789";

async function reasonOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof AuthError) return error.reason;
    throw error;
  }
  return "accepted";
}

describe("user tokens", () => {
  it("round-trips a token for a user", async () => {
    const token = await createUserToken(secret, "u_42", { expiresIn: 60 });
    const verified = await verifyUserToken(secret, token);
    expect(verified.userId).toBe("u_42");
    expect(verified.expiresAt).toBeGreaterThan(Date.now());
  });

  it("refuses an expired token", async () => {
    const token = await createUserToken(secret, "u_1", { expiresIn: 10, now: Date.now() - 60_000 });
    expect(await reasonOf(verifyUserToken(secret, token))).toBe("expired");
  });

  it("refuses a token signed with another secret (a foreign token)", async () => {
    const token = await createUserToken("someone-elses-secret", "u_1");
    expect(await reasonOf(verifyUserToken(secret, token))).toBe("bad_signature");
  });

  it("refuses a wrong audience, a missing exp, and garbage", async () => {
    const key = new TextEncoder().encode(secret);
    const wrongAud = await new SignJWT({})
      .setProtectedHeader({ alg: "HS256" })
      .setSubject("u_1")
      .setAudience("other")
      .setExpirationTime("1h")
      .sign(key);
    expect(await reasonOf(verifyUserToken(secret, wrongAud))).toBe("wrong_audience");
    const noExp = await new SignJWT({})
      .setProtectedHeader({ alg: "HS256" })
      .setSubject("u_1")
      .setAudience("patchbay")
      .sign(key);
    expect(await reasonOf(verifyUserToken(secret, noExp))).toBe("bad_claims");
    expect(await reasonOf(verifyUserToken(secret, "not.a.jwt"))).toBe("malformed");
  });
});
