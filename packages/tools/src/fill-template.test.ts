import { describe, expect, it } from "vitest";
import { fillTemplate, templatePlaceholders } from "./fill-template";

describe("fillTemplate", () => {
  it("fills placeholders from the arguments", () => {
    expect(fillTemplate("Book flight {flight_id} for {seats} seats?", { flight_id: "LH400", seats: 2 })).toBe(
      "Book flight LH400 for 2 seats?",
    );
  });

  it("reaches nested values, shows objects as JSON and keeps literal braces", () => {
    expect(
      fillTemplate("{{id}} {passenger.name} {stops} {ok}", {
        passenger: { name: "Ada" },
        stops: ["TXL"],
        ok: false,
      }),
    ).toBe('{id} Ada ["TXL"] false');
  });

  it("leaves a placeholder whose argument is absent as written", () => {
    expect(fillTemplate("Share {what}?", {})).toBe("Share {what}?");
    expect(fillTemplate("Share {toString}?", {})).toBe("Share {toString}?");
  });

  it("lists the top-level names used", () => {
    expect(templatePlaceholders("Book {flight_id} for {passenger.name}? {{x}}")).toEqual([
      "flight_id",
      "passenger",
    ]);
  });
});
