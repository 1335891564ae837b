import { SignJWT } from "jose";

// The signing half of `createUserToken` (its checks stay there), imported on first use together
// with jose. The audience comes from the caller, so this chunk shares no module with the page's.
export function signUserToken(
  secret: string,
  userId: string,
  audience: string,
  options: { expiresIn?: number | string; name?: string },
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const expiresIn = options.expiresIn ?? "1h";
  const claims: Record<string, string> = {};
  if (options.name !== undefined) claims.name = options.name;
  return (
    new SignJWT(claims)
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject(userId)
      .setAudience(audience)
      .setIssuedAt(now)
      // jose reads a number as an absolute time; a number here means seconds from now.
      .setExpirationTime(typeof expiresIn === "number" ? now + expiresIn : expiresIn)
      .sign(new TextEncoder().encode(secret))
  );
}
