import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { Client } from "./client-node";
import { connectFailure } from "./connect-failure";
import { DisconnectedError } from "./errors";

/** A port that was free a moment ago: nothing listens there. */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe("connect failures", () => {
  it("names the URL and 'connection refused' at once when nothing listens", async () => {
    const port = await deadPort();
    const client = new Client({ baseUrl: `http://127.0.0.1:${port}`, apiKey: "k", secret: "s" });
    const started = Date.now();
    const error = await client
      .agent("a")
      .sessions.create({ userId: "u" })
      .catch((e: unknown) => e);
    client.close();
    expect(error).toBeInstanceOf(DisconnectedError);
    expect((error as Error).message).toBe(
      `cannot connect to ws://127.0.0.1:${port}/v1/client: connection refused (nothing listens at that address)`,
    );
    // Not the 15 s request timeout: the first refused dial ends it.
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("names DNS and TLS failures and a non-Patchbay answer, and leaves resets to the retry", () => {
    expect(
      connectFailure({
        error: Object.assign(new Error("getaddrinfo ENOTFOUND nope"), { code: "ENOTFOUND" }),
      }),
    ).toBe("the host name does not resolve (DNS)");
    const tls = Object.assign(new Error("Hostname/IP does not match certificate's altnames"), {
      code: "ERR_TLS_CERT_ALTNAME_INVALID",
    });
    expect(connectFailure(new TypeError("fetch failed", { cause: tls }))).toMatch(
      /^TLS failed: Hostname\/IP does not match .*\(ERR_TLS_CERT_ALTNAME_INVALID\)$/,
    );
    expect(connectFailure({ error: new Error("Unexpected server response: 404") })).toMatch(
      /answered HTTP 404/,
    );
    expect(
      connectFailure({ error: Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }) }),
    ).toBeUndefined();
  });
});
