import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Client } from "@patchbay/client";

const COOKIE = "assistant_user";

/**
 * `POST /api/token`: mints a short-lived Patchbay user token for the visitor. The backend's
 * client holds the secret; the page never sees it. A real app takes the user from its own login;
 * this sample gives each browser a random id in a cookie, so a reload stays the same user and
 * can resume its session.
 */
export function tokenEndpoint(client: Client) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (req.method !== "POST") {
      res.writeHead(405, { allow: "POST" }).end();
      return;
    }
    const known = /(?:^|;\s*)assistant_user=([\w-]+)/.exec(req.headers.cookie ?? "")?.[1];
    const userId = known ?? `visitor-${randomUUID()}`;
    const token = await client.createUserToken(userId, { expiresIn: "15m" });
    res.writeHead(200, {
      "content-type": "application/json",
      "cache-control": "no-store",
      "set-cookie": `${COOKIE}=${userId}; Path=/; HttpOnly; SameSite=Strict`,
    });
    res.end(JSON.stringify({ user: { id: userId }, token }));
  };
}
