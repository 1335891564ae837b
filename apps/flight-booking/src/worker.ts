import { Client } from "@patchbay/client";
import { Dispatch } from "@patchbay/dispatch";
import { BookingsDb } from "./bookings-db";
import { bookFlight } from "./tools/book-flight";
import { searchFlights } from "./tools/search-flights";
import { seatMap } from "./tools/seat-map";

export interface FlightWorkerOptions {
  /** The Patchbay server, e.g. http://127.0.0.1:8787. */
  url: string;
  apiKey: string;
  secret: string;
  /** The SQLite file of the bookings table. */
  bookingsFile: string;
  /** The agents whose sessions may call these tools. Default: ["travel"]. */
  agents?: string[];
}

/**
 * A dispatch worker that hosts the flight tools for every session of the given agents. It
 * connects out to the server, so this backend needs no open port.
 */
export function createFlightWorker(options: FlightWorkerOptions) {
  const bookings = new BookingsDb(options.bookingsFile);
  const client = new Client({ baseUrl: options.url, apiKey: options.apiKey, secret: options.secret });
  // Hosted tool calls do not count against capacity; it only limits messages and phone calls.
  const dispatch = new Dispatch({
    capacity: 4,
    url: options.url,
    apiKey: options.apiKey,
    secret: options.secret,
  });

  for (const name of options.agents ?? ["travel"]) {
    const agent = client.agent(name);
    agent.tools.register(searchFlights).register(bookFlight(bookings)).register(seatMap(bookings));
    // The server waits this long for one call of these tools before telling the model it failed.
    dispatch.host(agent, { toolTimeoutMs: 60_000 });
  }

  return {
    dispatch,
    bookings,
    /** Connects and serves until `stop()`; resolves once connected. */
    start: () =>
      new Promise<void>((resolve, reject) => {
        dispatch.once("ready", () => resolve());
        dispatch.run().catch(reject);
      }),
    /** Drains: running calls finish (up to 10 s), then the socket and the database close. */
    stop: async () => {
      await dispatch.stop({ timeoutMs: 10_000 });
      client.close();
      bookings.close();
    },
  };
}

export type FlightWorker = ReturnType<typeof createFlightWorker>;
