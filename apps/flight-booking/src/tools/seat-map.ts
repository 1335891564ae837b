import { type ToolDefinition, ToolOutput } from "@patchbay/tools";
import { z } from "zod";
import type { BookingsDb } from "../bookings-db";
import { findFlight } from "../flights";
import { seatMapPng } from "../seat-map-png";

const SeatMap = z.object({
  flight_id: z
    .string()
    .regex(/^[A-Z]{2}\d{1,4}$/)
    .describe("e.g. LH400"),
});

/** An image result: text for the model plus a PNG it can look at (a text-only model is told it failed). */
export function seatMap(bookings: BookingsDb): ToolDefinition<z.infer<typeof SeatMap>> {
  return {
    name: "seat_map",
    description: "Show the seat map of a flight as an image.",
    parameters: SeatMap,
    displayTitle: "Drawing the seat map",
    timeoutMs: 15_000,
    run: ({ flight_id }) => {
      const flight = findFlight(flight_id);
      if (!flight) throw new Error(`there is no flight ${flight_id} today`);
      const total = flight.rows * flight.seatsPerRow;
      // A fixed pattern of seats sold elsewhere, plus the seats booked through this sample.
      const booked = bookings.seatsBooked(flight_id);
      const taken = (seat: number) => seat % 3 === 0 || seat >= total - booked;
      const free = Array.from({ length: total }, (_, seat) => seat).filter((seat) => !taken(seat)).length;
      return new ToolOutput({
        text: `Seat map of ${flight_id}: ${free} of ${total} seats free (green).`,
        images: [{ data: seatMapPng(flight.rows, flight.seatsPerRow, taken), mimeType: "image/png" }],
      });
    },
  };
}
