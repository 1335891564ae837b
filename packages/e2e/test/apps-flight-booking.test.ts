import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inflateSync } from "node:zlib";
import { allowAll, ToolExecutor, Tools, toolSpecOf } from "@patchbay/tools";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BookingsDb, bookFlight, searchFlights, seatMap } from "../../../apps/flight-booking/src/index";

// The flight-booking sample's tools, run through the same executor a dispatch worker runs them
// with, over a real SQLite bookings file.

const dir = mkdtempSync(join(tmpdir(), "patchbay-flights-"));
let db: BookingsDb;
let tools: Tools;

beforeAll(() => {
  db = new BookingsDb(join(dir, "bookings.sqlite"));
  tools = new Tools().register(searchFlights).register(bookFlight(db)).register(seatMap(db));
});

afterAll(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A fresh executor is a fresh worker: nothing remembered from another one. */
const worker = () =>
  new ToolExecutor({ tools, sessionId: "s_1", user: { id: "u_1" }, approvalGate: allowAll });

describe("the flight-booking tools", () => {
  it("book a call delivered to a second worker once: the call id is the bookings table's key", async () => {
    const call = { id: "call_redelivered", name: "book_flight", arguments: { flight_id: "LH400", seats: 2 } };
    const first = await worker().execute(call, { attempt: 1 });
    const again = await worker().execute(call, { attempt: 2 });
    expect(first.outcome).toBe("completed");
    expect(first.content.text).toMatch(
      /^Booked 2 economy seat\(s\) on LH400\. Confirmation PB-[0-9A-F]{6}\.$/,
    );
    expect(again.outcome).toBe("completed");
    expect(again.content.text).toBe(first.content.text);
    expect(db.byCallId("call_redelivered")).toMatchObject({ seats: 2, cabin: "economy", userId: "u_1" });
    expect(db.count()).toBe(1);
  });

  it("refuse arguments that break the pattern or the range, before anything is booked", async () => {
    const before = db.count();
    const tooMany = await worker().execute({
      id: "call_12",
      name: "book_flight",
      arguments: { flight_id: "LH400", seats: 12 },
    });
    expect(tooMany.outcome).toBe("invalid_arguments");
    expect(tooMany.content.text).toContain("seats: Input should be less than or equal to 9");
    const badId = await worker().execute({
      id: "call_bad",
      name: "book_flight",
      arguments: { flight_id: "lh-4", seats: 1 },
    });
    expect(badId.outcome).toBe("invalid_arguments");
    expect(badId.content.text).toContain("flight_id");
    expect(db.count()).toBe(before);
  });

  it("cancel a booking interrupted before the seat is held, and finish one interrupted after", async () => {
    const before = db.count();
    const early = worker();
    early.once("progress", () => early.interrupt());
    const cancelled = await early.execute({
      id: "call_early",
      name: "book_flight",
      arguments: { flight_id: "KL641", seats: 1 },
    });
    expect(cancelled.outcome).toBe("cancelled");
    expect(db.count()).toBe(before);

    const late = worker();
    late.once("held", () => late.interrupt());
    const held = await late.execute({
      id: "call_late",
      name: "book_flight",
      arguments: { flight_id: "KL641", seats: 1, cabin: "first" },
    });
    expect(held.outcome).toBe("completed");
    expect(held.held).toBe(true);
    expect(db.byCallId("call_late")?.cabin).toBe("first");
  });

  it("stop a search at once when the user interrupts", async () => {
    const executor = worker();
    executor.once("progress", () => executor.interrupt());
    const startedAt = Date.now();
    const result = await executor.execute({
      id: "call_search",
      name: "search_flights",
      arguments: { to: "Lisbon" },
    });
    expect(result.outcome).toBe("cancelled");
    expect(Date.now() - startedAt).toBeLessThan(1_000);
  });

  it("draw the seat map as a PNG that decodes, with the booked seats taken", async () => {
    const result = await worker().execute({
      id: "call_map",
      name: "seat_map",
      arguments: { flight_id: "LH400" },
    });
    expect(result.outcome).toBe("completed");
    expect(result.content.text).toBe("Seat map of LH400: 46 of 72 seats free (green).");
    const image = result.content.images[0];
    if (!image || !("data" in image)) throw new Error("expected inline image data");
    expect(image.mimeType).toBe("image/png");
    const { width, height, pixels } = decodePng(Buffer.from(image.data, "base64"));
    expect(pixels.length).toBe((width * 3 + 1) * height);
    expect(width).toBeGreaterThan(50);
  });

  it("set a timeout on every tool", () => {
    expect(
      [searchFlights, bookFlight(db), seatMap(db)].map((tool) => [tool.name, toolSpecOf(tool).timeoutMs]),
    ).toEqual([
      ["search_flights", 10_000],
      ["book_flight", 60_000],
      ["seat_map", 15_000],
    ]);
  });
});

/** Walks the chunks, checks each CRC, and inflates the pixel data. */
function decodePng(png: Buffer): { width: number; height: number; pixels: Buffer } {
  expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  let offset = 8;
  let width = 0;
  let height = 0;
  const data: Buffer[] = [];
  while (offset < png.length) {
    const length = png.readUInt32BE(offset);
    const type = png.toString("ascii", offset + 4, offset + 8);
    const body = png.subarray(offset + 8, offset + 8 + length);
    expect(png.readUInt32BE(offset + 8 + length)).toBe(crc32(png.subarray(offset + 4, offset + 8 + length)));
    if (type === "IHDR") {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
    }
    if (type === "IDAT") data.push(body);
    offset += 12 + length;
  }
  return { width, height, pixels: inflateSync(Buffer.concat(data)) };
}

function crc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? 0xedb88320 ^ (crc >>> 1) : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}
