import { describe, expect, it } from "vitest";
import { ToolOutputError } from "./errors";
import { ToolOutput } from "./tool-output";
import { toToolOutputContent } from "./tool-output-content";

describe("toToolOutputContent", () => {
  it("keeps strings, empties undefined and writes the rest as JSON", () => {
    expect(toToolOutputContent("Booked.")).toEqual({ text: "Booked.", images: [] });
    expect(toToolOutputContent(undefined)).toEqual({ text: "", images: [] });
    expect(toToolOutputContent({ a: [1, "x"] })).toEqual({ text: '{"a":[1,"x"]}', images: [] });
    expect(toToolOutputContent(false)).toEqual({ text: "false", images: [] });
  });

  it("builds text and images from a ToolOutput", () => {
    expect(toToolOutputContent(new ToolOutput({ images: ["https://x.test/a.png"] }))).toEqual({
      text: "",
      images: [{ type: "image", url: "https://x.test/a.png" }],
    });
  });

  it("names the image that is wrong", () => {
    const output = new ToolOutput({ text: "x", images: ["https://x.test/ok.png", "http://x.test/no.png"] });
    expect(() => toToolOutputContent(output)).toThrow(ToolOutputError);
    expect(() => toToolOutputContent(output)).toThrow(/^images\.1: /);
  });

  it("refuses values with no JSON form", () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(() => toToolOutputContent(cycle)).toThrow(/cannot be sent as JSON/);
    expect(() => toToolOutputContent(10n)).toThrow(/cannot be sent as JSON/);
    expect(() => toToolOutputContent(() => 1)).toThrow(
      "the tool returned a function, which has no JSON form",
    );
  });
});
