import type { ToolDefinition } from "@patchbay/tools";
import { z } from "zod";
import { airlineLatency, airportCode, FLIGHTS } from "../flights";

const SearchFlights = z.object({
  to: z.string().min(2).describe("destination city or airport code, e.g. Lisbon or LIS"),
  from: z.string().min(2).optional().describe("origin city or airport code; any when left out"),
});

/**
 * Only reads, so an interrupt (the user sends a new message or presses stop) cancels it: the
 * signal aborts, the airline request stops, and the model is told the call was cancelled.
 */
export const searchFlights: ToolDefinition<z.infer<typeof SearchFlights>> = {
  name: "search_flights",
  description: "Search today's flights to a destination.",
  parameters: SearchFlights,
  displayTitle: "Searching flights",
  interruptible: true,
  timeoutMs: 10_000,
  run: async ({ to, from }, signal, ctx) => {
    const destination = airportCode(to);
    const origin = from === undefined ? undefined : airportCode(from);
    for (const airline of ["Lufthansa", "KLM", "TAP"]) {
      ctx.update(`Asking ${airline} for flights to ${destination}`);
      await airlineLatency(400, signal);
    }
    const flights = FLIGHTS.filter((f) => f.to === destination && (!origin || f.from === origin));
    const summary =
      flights.length === 0
        ? `no flights to ${destination} today`
        : flights.map((f) => `${f.id} ${f.from}-${f.to} at ${f.departs}`).join(", ");
    // A JSON result: the model (and the scripted model's templates) can read each field.
    return { destination, summary, flights: flights.map(({ id, from, departs }) => ({ id, from, departs })) };
  },
};
