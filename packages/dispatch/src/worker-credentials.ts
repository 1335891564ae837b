import type { ClientCredentials } from "@patchbay/client";
import { DispatchError } from "./dispatch-error";

/** Where a worker connects and how it authenticates, once every source was read. */
export interface WorkerCredentials {
  url: string;
  apiKey: string;
  secret: string;
}

/** What the credentials are read from: the options, the `Client` passed in them, the environment. */
export interface CredentialSources {
  url?: string | undefined;
  apiKey?: string | undefined;
  secret?: string | undefined;
  client?: unknown;
  env: Record<string, string | undefined>;
}

/**
 * The worker's URL, key and secret. An option given explicitly wins; with `client`, the rest
 * come from the client (the environment is not read, so one source names the server); without
 * it, from `PATCHBAY_URL`, `PATCHBAY_API_KEY` and `PATCHBAY_API_SECRET`. Throws a
 * {@link DispatchError} whose `path` names the field that is missing or wrong.
 */
export function resolveCredentials(sources: CredentialSources): WorkerCredentials {
  if (sources.client !== undefined) return fromClient(sources, credentialsOf(sources.client));
  const { env } = sources;
  const url = sources.url ?? env.PATCHBAY_URL;
  if (!url) {
    throw new DispatchError(
      "invalid_options",
      "url: no server URL; pass { url }, pass { client } (a @patchbay/client Client), or set PATCHBAY_URL",
      { path: "url" },
    );
  }
  const apiKey = sources.apiKey ?? env.PATCHBAY_API_KEY;
  const secret = sources.secret ?? env.PATCHBAY_API_SECRET;
  if (!apiKey || !secret) {
    const path = !apiKey ? "apiKey" : "secret";
    throw new DispatchError(
      "missing_credentials",
      `${path}: a worker needs the API key and secret; ${!apiKey ? "apiKey (or PATCHBAY_API_KEY)" : "secret (or PATCHBAY_API_SECRET)"} is missing`,
      { path },
    );
  }
  return { url, apiKey, secret };
}

function credentialsOf(client: unknown): ClientCredentials {
  const credentials = (client as { credentials?: unknown } | null)?.credentials;
  if (
    typeof credentials !== "object" ||
    credentials === null ||
    typeof (credentials as ClientCredentials).baseUrl !== "string"
  ) {
    throw new DispatchError(
      "invalid_options",
      "client: must be a @patchbay/client Client (new Client({ baseUrl, apiKey, secret })), whose credentials the worker uses",
      { path: "client" },
    );
  }
  return credentials as ClientCredentials;
}

function fromClient(sources: CredentialSources, client: ClientCredentials): WorkerCredentials {
  const url = sources.url ?? client.baseUrl;
  const apiKey = sources.apiKey ?? client.apiKey;
  const secret = sources.secret ?? client.secret;
  if (!apiKey || !secret) {
    const field = !apiKey ? "apiKey" : "secret";
    throw new DispatchError(
      "missing_credentials",
      `client.${field}: the Client has no ${field === "apiKey" ? "API key" : "secret"}, and a worker needs both; make it with new Client({ baseUrl, apiKey, secret }) or pass { ${field} } to Dispatch`,
      { path: `client.${field}` },
    );
  }
  return { url, apiKey, secret };
}
