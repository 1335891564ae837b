import type { ToolDefinition } from "@patchbay/tools";
import { z } from "zod";
import type { BookingsDb } from "../bookings-db";
import { airlineLatency, findFlight } from "../flights";

// The seed guide's schema: a pattern, an int range and an enum with a default. Arguments that do
// not fit never reach `run`: the model gets "seats: Input should be less than or equal to 9".
export const BookFlight = z.object({
  flight_id: z
    .string()
    .regex(/^[A-Z]{2}\d{1,4}$/)
    .describe("e.g. LH400"),
  seats: z.number().int().min(1).max(9),
  cabin: z.enum(["economy", "business", "first"]).default("economy"),
});

export function bookFlight(bookings: BookingsDb): ToolDefinition<z.infer<typeof BookFlight>> {
  return {
    name: "book_flight",
    description: "Book seats on a flight the user picked. Ask before booking.",
    parameters: BookFlight,
    displayTitle: "Booking your flight",
    // The user confirms in the page (or the terminal) before anything runs.
    approval: {
      title: "Book {seats} seat(s) on flight {flight_id}?",
      allowTitle: "Book",
      declineTitle: "Cancel",
    },
    // Interruptible until the seat is held; from then on only the timeout stops it.
    interruptible: true,
    timeoutMs: 60_000,
    run: async ({ flight_id, seats, cabin }, signal, ctx) => {
      if (!findFlight(flight_id)) throw new Error(`there is no flight ${flight_id} today`);
      ctx.update(`Holding ${seats} ${cabin} seat(s) on ${flight_id}`);
      await airlineLatency(300, signal);

      // The seat is held: an interrupt must no longer abandon the booking half done.
      const held = await ctx.disallowInterruptions();
      ctx.update("Seat held, confirming with the airline");
      await airlineLatency(300, held);

      // The call id is the idempotency key: a call delivered again books nothing new.
      const { booking } = bookings.bookOnce({
        callId: ctx.id,
        flightId: flight_id,
        seats,
        cabin,
        userId: ctx.user.id,
      });
      return `Booked ${booking.seats} ${booking.cabin} seat(s) on ${booking.flightId}. Confirmation ${booking.confirmation}.`;
    },
  };
}
