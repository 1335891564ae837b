import { describe, expect, it } from "vitest";
import { AuthError, NotFoundError, ServerError } from "../errors";
import { Authenticator, assertCanAccess, sessionOwner } from "./auth";
import { createUserToken } from "./user-token";

const credentials = { apiKey: "pk_1", secret: "secret-1" };
const auth = new Authenticator(credentials);
const session = { id: "s_1", agent: "a", userId: "u_1", metadata: {}, createdAt: 0, lastSeq: 0 };

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof AuthError) return error.reason;
    throw error;
  }
  return "accepted";
}

describe("Authenticator", () => {
  it("accepts the API key with its secret and refuses either one wrong or missing", async () => {
    expect(await auth.fromHello({ kind: "api_key", apiKey: "pk_1", secret: "secret-1" })).toEqual({
      kind: "backend",
    });
    expect(await refusal(auth.fromHello({ kind: "api_key", apiKey: "pk_2", secret: "secret-1" }))).toBe(
      "bad_api_key",
    );
    expect(await refusal(auth.fromHello({ kind: "api_key", apiKey: "pk_1", secret: "secret-2" }))).toBe(
      "bad_api_key",
    );
    expect(await refusal(auth.fromHello({ kind: "api_key", apiKey: "pk_1" }))).toBe("missing");
  });

  it("reads HTTP headers: backend with x-api-key and the secret, user with a bearer token", async () => {
    expect(await auth.fromHttpHeaders({ "x-api-key": "pk_1", authorization: "Bearer secret-1" })).toEqual({
      kind: "backend",
    });
    const token = await createUserToken("secret-1", "u_9");
    expect(await auth.fromHttpHeaders({ authorization: `Bearer ${token}` })).toEqual({
      kind: "user",
      userId: "u_9",
    });
    expect(await refusal(auth.fromHttpHeaders({}))).toBe("missing");
    expect(await refusal(auth.fromHttpHeaders({ authorization: "Basic abc" }))).toBe("malformed");
    expect(await refusal(auth.fromHttpHeaders({ "x-api-key": "pk_1", authorization: "Bearer nope" }))).toBe(
      "bad_api_key",
    );
    // The secret alone, without the key, is not a user token.
    expect(await refusal(auth.fromHttpHeaders({ authorization: "Bearer secret-1" }))).toBe("malformed");
  });

  it("makes a user own their sessions and a backend name the user", () => {
    expect(sessionOwner({ kind: "user", userId: "u_1" }, undefined)).toBe("u_1");
    expect(() => sessionOwner({ kind: "user", userId: "u_1" }, "u_2")).toThrow(ServerError);
    expect(sessionOwner({ kind: "backend" }, "u_3")).toBe("u_3");
    expect(() => sessionOwner({ kind: "backend" }, undefined)).toThrow(/userId is required/);
  });

  it("answers not_found for another user's session, exactly as for a missing one", () => {
    expect(() => assertCanAccess({ kind: "user", userId: "u_1" }, session, "s_1")).not.toThrow();
    expect(() => assertCanAccess({ kind: "backend" }, session, "s_1")).not.toThrow();
    const foreign = (() => {
      try {
        assertCanAccess({ kind: "user", userId: "u_2" }, session, "s_1");
      } catch (error) {
        return error as NotFoundError;
      }
    })();
    const missing = (() => {
      try {
        assertCanAccess({ kind: "user", userId: "u_2" }, undefined, "s_1");
      } catch (error) {
        return error as NotFoundError;
      }
    })();
    expect(foreign).toBeInstanceOf(NotFoundError);
    expect(foreign?.message).toBe(missing?.message);
  });

  it("refuses to start without credentials", () => {
    expect(() => new Authenticator({ apiKey: "", secret: "x" })).toThrow(/API key and a secret/);
  });
});
