import type { ClientCore } from "@patchbay/client";
import { createContext, type ReactNode, useContext } from "react";

const ClientContext = createContext<ClientCore | undefined>(undefined);

/**
 * Holds the Patchbay client for the hooks below it. Make the client once (outside render, or in
 * a `useState` initializer): the provider neither creates nor closes it.
 *
 * @example
 * ```tsx
 * const client = new Client({ baseUrl: location.origin, tokenProvider });
 * root.render(<PatchbayProvider client={client}><Chat /></PatchbayProvider>);
 * ```
 */
export function PatchbayProvider({ client, children }: { client: ClientCore; children?: ReactNode }) {
  return <ClientContext.Provider value={client}>{children}</ClientContext.Provider>;
}

/**
 * The client of the nearest {@link PatchbayProvider}. Throws when there is none.
 *
 * @example
 * ```ts
 * const client = useClient();
 * ```
 */
export function useClient(): ClientCore {
  const client = useContext(ClientContext);
  if (!client) throw new Error("useClient: no <PatchbayProvider client={...}> above this component");
  return client;
}
