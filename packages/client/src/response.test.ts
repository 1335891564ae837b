import { describe, expect, it } from "vitest";
import { ResponseFailedError } from "./errors";
import { Response, type ResponseSink } from "./response";

function make(): { response: Response; sink: ResponseSink } {
  let sink!: ResponseSink;
  const response = new Response("c_1", (s) => {
    sink = s;
  });
  return { response, sink };
}

describe("Response", () => {
  it("streams deltas to an iterator and resolves with the final reply", async () => {
    const { response, sink } = make();
    const seen: string[] = [];
    const iterating = (async () => {
      for await (const delta of response) seen.push(delta);
    })();
    sink.started("r_1");
    sink.delta("Hel");
    await Promise.resolve();
    sink.delta("lo");
    sink.completed({ id: "r_1", text: "Hello", reason: "stop", usage: { inputTokens: 3, outputTokens: 2 } });
    await iterating;
    expect(seen).toEqual(["Hel", "lo"]);
    await expect(response).resolves.toEqual({
      id: "r_1",
      text: "Hello",
      reason: "stop",
      usage: { inputTokens: 3, outputTokens: 2 },
    });
    expect(response.id).toBe("r_1");
    expect(response.text).toBe("Hello");
  });

  it("replays every delta to an iterator that starts late", async () => {
    const { response, sink } = make();
    sink.delta("a");
    sink.delta("b");
    sink.completed({ id: "r", text: "ab", reason: "stop" });
    const seen: string[] = [];
    for await (const delta of response) seen.push(delta);
    expect(seen).toEqual(["a", "b"]);
  });

  it("rejects the promise and throws from the iteration with the typed error", async () => {
    const { response, sink } = make();
    sink.delta("partial");
    sink.failed(new ResponseFailedError("model down", "r_1", { wireCode: "model_error" }));
    const seen: string[] = [];
    const iteration = (async () => {
      for await (const delta of response) seen.push(delta);
    })();
    await expect(iteration).rejects.toBeInstanceOf(ResponseFailedError);
    expect(seen).toEqual(["partial"]);
    const error = await response.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: "response_failed", wireCode: "model_error" });
  });

  it("ignores anything after it settled", async () => {
    const { response, sink } = make();
    sink.completed({ id: "r", text: "x", reason: "interrupted" });
    sink.delta("late");
    sink.failed(new ResponseFailedError("late", "r"));
    await expect(response).resolves.toMatchObject({ reason: "interrupted" });
    expect(response.text).toBe("");
  });
});
