import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";

export interface Booking {
  /** The tool call id that made the booking: its idempotency key. */
  callId: string;
  confirmation: string;
  flightId: string;
  seats: number;
  cabin: string;
  userId: string;
  createdAt: number;
}

/**
 * The bookings table. A booking is keyed by the id of the tool call that made it: Patchbay keeps
 * a call's id when it delivers the call again (a worker reconnected, or another worker took over
 * after a crash), so the second delivery finds the first booking instead of booking twice.
 */
export class BookingsDb {
  readonly #db: Database.Database;

  constructor(file: string) {
    mkdirSync(dirname(file), { recursive: true });
    this.#db = new Database(file);
    this.#db.pragma("journal_mode = WAL");
    this.#db.exec(`
      CREATE TABLE IF NOT EXISTS bookings (
        call_id      TEXT PRIMARY KEY,
        confirmation TEXT NOT NULL,
        flight_id    TEXT NOT NULL,
        seats        INTEGER NOT NULL,
        cabin        TEXT NOT NULL,
        user_id      TEXT NOT NULL,
        created_at   INTEGER NOT NULL
      )`);
  }

  /** Books once per call id: a repeated call id returns the booking it already made. */
  bookOnce(booking: Omit<Booking, "confirmation" | "createdAt">): { booking: Booking; created: boolean } {
    const confirmation = `PB-${randomBytes(3).toString("hex").toUpperCase()}`;
    const inserted = this.#db
      .prepare(
        `INSERT INTO bookings (call_id, confirmation, flight_id, seats, cabin, user_id, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (call_id) DO NOTHING`,
      )
      .run(
        booking.callId,
        confirmation,
        booking.flightId,
        booking.seats,
        booking.cabin,
        booking.userId,
        Date.now(),
      );
    return { booking: this.byCallId(booking.callId)!, created: inserted.changes === 1 };
  }

  byCallId(callId: string): Booking | undefined {
    const row = this.#db
      .prepare(
        `SELECT call_id AS callId, confirmation, flight_id AS flightId, seats, cabin,
                user_id AS userId, created_at AS createdAt
         FROM bookings WHERE call_id = ?`,
      )
      .get(callId);
    return row as Booking | undefined;
  }

  /** How many seats are booked on a flight, for the seat map. */
  seatsBooked(flightId: string): number {
    const row = this.#db
      .prepare("SELECT COALESCE(SUM(seats), 0) AS seats FROM bookings WHERE flight_id = ?")
      .get(flightId) as { seats: number };
    return row.seats;
  }

  count(): number {
    return (this.#db.prepare("SELECT COUNT(*) AS n FROM bookings").get() as { n: number }).n;
  }

  close(): void {
    this.#db.close();
  }
}
