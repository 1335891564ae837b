import { describe, expect, it } from "vitest";
import * as node from "./index";
import * as browser from "./index.browser";

describe("package entries", () => {
  it("export the same names from the Node and the browser entry, but the synchronous JSON Schema and image checks", () => {
    const nodeOnly = [
      "validateArguments",
      "setPatternEngine",
      "toImageContent",
      "sniffImageType",
      "toToolOutputContent",
    ];
    expect(Object.keys(browser).sort()).toEqual(
      Object.keys(node)
        .filter((name) => !nodeOnly.includes(name))
        .sort(),
    );
  });
});
