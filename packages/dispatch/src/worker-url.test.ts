import { describe, expect, it } from "vitest";
import { DispatchError } from "./dispatch-error";
import { workerSocketUrl } from "./worker-url";

describe("workerSocketUrl", () => {
  it("turns a server base URL into its worker socket URL", () => {
    expect(workerSocketUrl("http://127.0.0.1:8787")).toBe("ws://127.0.0.1:8787/v1/worker");
    expect(workerSocketUrl("https://agents.example.com/base/")).toBe(
      "wss://agents.example.com/base/v1/worker",
    );
  });

  it("keeps a URL that already names the socket", () => {
    expect(workerSocketUrl("ws://127.0.0.1:9000/v1/worker")).toBe("ws://127.0.0.1:9000/v1/worker");
  });

  it("refuses what is not an http or ws URL, with a stable code and the field named", () => {
    expect(() => workerSocketUrl("not a url")).toThrow(
      expect.objectContaining({ code: "invalid_options", path: "url" }),
    );
    try {
      workerSocketUrl("ftp://example.com");
    } catch (error) {
      expect(error).toBeInstanceOf(DispatchError);
      expect((error as DispatchError).code).toBe("invalid_options");
      expect((error as DispatchError).path).toBe("url");
      expect((error as DispatchError).message).toContain("ftp:");
    }
    expect.assertions(5);
  });
});
