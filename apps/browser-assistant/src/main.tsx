import { Client } from "@patchbay/client";
import { PatchbayProvider } from "@patchbay/react";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./app";
import "@patchbay/react/styles.css";
import "./style.css";

/** The user token comes from this app's backend, which mints it with the Patchbay secret. */
async function fetchToken(): Promise<{ user: { id: string }; token: string }> {
  const response = await fetch("/api/token", { method: "POST" });
  if (!response.ok) throw new Error(`token endpoint: ${response.status}`);
  return response.json();
}

const { user, token } = await fetchToken();
// Same origin: the page's server forwards /v1 (HTTP and the session socket) to Patchbay.
const client = new Client({
  baseUrl: location.origin,
  tokenProvider: async () => (await fetchToken()).token,
});
client.setUser(user, token);

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <PatchbayProvider client={client}>
      <App />
    </PatchbayProvider>
  </StrictMode>,
);
