import { describe, expect, it } from "vitest";
import * as node from "./index";
import * as browser from "./index.browser";

describe("package entries", () => {
  it("export the same names from the Node and the browser entry, but the synchronous JSON Schema check", () => {
    expect(Object.keys(browser).sort()).toEqual(
      Object.keys(node)
        .filter((name) => name !== "validateArguments" && name !== "setPatternEngine")
        .sort(),
    );
  });
});
