import { describe, expect, it } from "vitest";
import { suggestFlag } from "./suggest-flag";

describe("suggestFlag", () => {
  it("suggests the flag a typo meant, and nothing for an unrelated word", () => {
    expect(suggestFlag("form", ["from", "name", "no-install"])).toBe("from");
    expect(suggestFlag("no-instal", ["from", "name", "no-install"])).toBe("no-install");
    expect(suggestFlag("registry", ["from", "name", "no-install"])).toBeUndefined();
  });
});
