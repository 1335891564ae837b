// The airline this sample talks to: a fixed timetable in memory, so the sample runs offline.
// In your backend this is the airline's API or your own inventory service.

export interface Flight {
  id: string;
  from: string;
  to: string;
  departs: string;
  seatsPerRow: number;
  rows: number;
}

export const FLIGHTS: readonly Flight[] = [
  { id: "LH400", from: "FRA", to: "JFK", departs: "10:05", seatsPerRow: 6, rows: 12 },
  { id: "LH402", from: "FRA", to: "JFK", departs: "13:30", seatsPerRow: 6, rows: 12 },
  { id: "KL641", from: "AMS", to: "JFK", departs: "12:55", seatsPerRow: 6, rows: 10 },
  { id: "TP1351", from: "LIS", to: "AMS", departs: "06:40", seatsPerRow: 4, rows: 10 },
  { id: "KL1692", from: "AMS", to: "LIS", departs: "09:20", seatsPerRow: 4, rows: 10 },
];

const CITY_CODES: Record<string, string> = {
  "new york": "JFK",
  amsterdam: "AMS",
  lisbon: "LIS",
  frankfurt: "FRA",
};

/** "Lisbon", "lis" or "LIS" -> "LIS". */
export function airportCode(place: string): string {
  const key = place.trim().toLowerCase();
  return CITY_CODES[key] ?? key.toUpperCase();
}

export function findFlight(id: string): Flight | undefined {
  return FLIGHTS.find((flight) => flight.id === id);
}

/** Waits like a network call would, and stops at once when the signal aborts. */
export function airlineLatency(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
