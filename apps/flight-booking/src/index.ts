import { join } from "node:path";

export { type Booking, BookingsDb } from "./bookings-db";
export { FLIGHTS, findFlight } from "./flights";
export { seatMapPng } from "./seat-map-png";
export { BookFlight, bookFlight } from "./tools/book-flight";
export { searchFlights } from "./tools/search-flights";
export { seatMap } from "./tools/seat-map";
export { createFlightWorker, type FlightWorker, type FlightWorkerOptions } from "./worker";

/** The directory holding `agents/travel.yaml`, for `createServer({ configDir })`. */
export const flightBookingConfigDir = join(import.meta.dirname, "..");
