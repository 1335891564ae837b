import { describe, expect, it } from "vitest";
import { ClientAuth } from "./client-auth";
import { AuthError } from "./errors";
import { createUserToken } from "./user-token";

describe("ClientAuth", () => {
  it("presents a backend's key and secret, on the socket and over HTTP", async () => {
    const auth = new ClientAuth({ apiKey: "k", secret: "s" });
    expect(await auth.hello(false)).toEqual({ kind: "api_key", apiKey: "k", secret: "s" });
    expect(await auth.headers(false)).toEqual({ "x-api-key": "k", authorization: "Bearer s" });
    expect(auth.canRefresh()).toBe(false);
  });

  it("acts as the user it was given, asks the provider when the token is stale, and shares one refresh", async () => {
    let minted = 0;
    const auth = new ClientAuth({
      tokenProvider: async () =>
        createUserToken("secret-of-32-bytes-at-least-1234", "u_1", {
          expiresIn: "15m",
          name: `t${++minted}`,
        }),
    });
    expect(auth.setUser({ id: "u_1" }, undefined)).toBe(true);
    expect(auth.setUser({ id: "u_1" }, undefined)).toBe(false);
    const [a, b] = await Promise.all([auth.hello(false), auth.headers(false)]);
    expect(minted).toBe(1);
    expect(a).toMatchObject({ kind: "user" });
    expect(b.authorization).toBe(`Bearer ${(a as { token: string }).token}`);
    await auth.hello(false);
    expect(minted).toBe(1);
    await auth.hello(true);
    expect(minted).toBe(2);
    expect(auth.canRefresh()).toBe(true);
  });

  it("refuses without credentials, and mints user tokens only with the secret", async () => {
    await expect(new ClientAuth({}).hello(false)).rejects.toThrow(AuthError);
    await expect(new ClientAuth({ apiKey: "k" }).createUserToken("u_1", {})).rejects.toThrow(
      /needs the client's secret/,
    );
  });
});
