// Runs every shared test vector in vectors/ against this package, the way an SDK in another
// language is meant to run them (see vectors/README.md), and checks the vectors against the
// checked-in JSON Schema too, so the schema, the zod code and the vectors all agree.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Validator } from "@cfworker/json-schema";
import { describe, expect, it } from "vitest";
import {
  decodeFrame,
  type FrameChannel,
  knownTypes,
  type NormalizedToolCall,
  normalizeToolCalls,
  ToolCallFormatError,
} from "../src/index";

const root = join(import.meta.dirname, "..");
const load = <T>(path: string): T => JSON.parse(readFileSync(join(root, path), "utf8")) as T;

interface ValidVector {
  name: string;
  channel: FrameChannel;
  frame?: unknown;
  text?: string;
  maxBytes?: number;
  maxResultBytes?: number;
  decoded?: unknown;
}
interface InvalidVector {
  name: string;
  channel: FrameChannel;
  frame?: unknown;
  text?: string;
  maxBytes?: number;
  maxResultBytes?: number;
  error: { code: string; path: string | null };
}
interface ToolCallVector {
  name: string;
  format: string;
  input: unknown;
  output?: NormalizedToolCall[];
  error?: { code: string; index: number };
}

const valid = load<{ vectors: ValidVector[] }>("vectors/frames.valid.json").vectors;
const invalid = load<{ vectors: InvalidVector[] }>("vectors/frames.invalid.json").vectors;
const toolCalls = load<{ vectors: ToolCallVector[] }>("vectors/tool-calls.json").vectors;

const CHANNELS: FrameChannel[] = [
  "client-to-server",
  "server-to-client",
  "worker-to-server",
  "server-to-worker",
];
const validators = new Map(
  CHANNELS.map((channel) => [
    channel,
    new Validator(load(`schema/${channel}.schema.json`), "2020-12", false),
  ]),
);

function textOf(vector: { frame?: unknown; text?: string }): string {
  return vector.text ?? JSON.stringify(vector.frame);
}

describe("vectors/frames.valid.json", () => {
  it.each(valid.map((v) => [v.name, v] as const))("%s", (_name, vector) => {
    const result = decodeFrame(textOf(vector), {
      channel: vector.channel,
      maxBytes: vector.maxBytes,
      maxResultBytes: vector.maxResultBytes,
    });
    if (!result.ok) throw new Error(`expected to decode, got ${result.error.code}: ${result.error.message}`);
    const expected = vector.decoded ?? vector.frame;
    expect(result.frame).toEqual(expected);
    // The frame as sent fits the channel's JSON Schema as well.
    const sent = vector.frame ?? JSON.parse(vector.text!);
    const check = validators.get(vector.channel)!.validate(sent);
    expect(check.errors.map((e) => `${e.instanceLocation}: ${e.error}`)).toEqual([]);
  });

  it("has a valid vector for every frame type on every channel", () => {
    for (const channel of CHANNELS) {
      const covered = new Set(
        valid
          .filter((v) => v.channel === channel)
          .map((v) => (JSON.parse(textOf(v)) as { type: string }).type),
      );
      expect(
        [...knownTypes(channel)].filter((type) => !covered.has(type)),
        channel,
      ).toEqual([]);
    }
  });
});

describe("vectors/frames.invalid.json", () => {
  it.each(invalid.map((v) => [v.name, v] as const))("%s", (_name, vector) => {
    const result = decodeFrame(textOf(vector), {
      channel: vector.channel,
      maxBytes: vector.maxBytes,
      maxResultBytes: vector.maxResultBytes,
    });
    if (result.ok) throw new Error(`expected ${vector.error.code}, but it decoded`);
    expect({ code: result.error.code, path: result.error.path ?? null }).toEqual(vector.error);
    expect(result.error.message.length).toBeGreaterThan(0);
    // What zod refuses, the published JSON Schema refuses too.
    if (vector.error.code === "invalid_frame" && vector.frame !== undefined) {
      const type = (vector.frame as { type?: unknown }).type;
      if (typeof type === "string")
        expect(validators.get(vector.channel)!.validate(vector.frame).valid).toBe(false);
    }
  });

  it("names a field path for every invalid_frame vector of a known type", () => {
    const named = invalid.filter((v) => v.error.code === "invalid_frame" && v.frame !== undefined);
    for (const vector of named) expect(vector.error.path, vector.name).not.toBeNull();
    // Wrong fields are exercised on every channel.
    expect(new Set(named.map((v) => v.channel))).toEqual(new Set(CHANNELS));
  });

  it("covers every decode error code", () => {
    expect(new Set(invalid.map((v) => v.error.code))).toEqual(
      new Set(["invalid_json", "invalid_frame", "unknown_frame_type", "frame_too_large"]),
    );
  });
});

describe("vectors/tool-calls.json", () => {
  it.each(toolCalls.map((v) => [v.name, v] as const))("%s", (_name, vector) => {
    if (vector.error) {
      let thrown: unknown;
      try {
        normalizeToolCalls(vector.input);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(ToolCallFormatError);
      const error = thrown as ToolCallFormatError;
      expect({ code: error.code, index: error.index }).toEqual(vector.error);
      expect(error.message).toContain(`position ${vector.error.index}`);
      return;
    }
    const calls = normalizeToolCalls(vector.input);
    // argumentsError is compared as a prefix: after it comes the JSON parser's own words.
    const actual = calls.map(({ argumentsError, ...rest }, i) => {
      const expectedError = vector.output![i]?.argumentsError;
      if (expectedError === undefined) {
        expect(argumentsError).toBeUndefined();
        return rest;
      }
      expect(
        argumentsError?.startsWith(expectedError),
        `${argumentsError} starts with ${expectedError}`,
      ).toBe(true);
      return { ...rest, argumentsError: expectedError };
    });
    expect(actual).toEqual(vector.output);
  });

  it("covers every provider format, and both success and error", () => {
    expect(new Set(toolCalls.map((v) => v.format))).toEqual(
      new Set(["openai-chat", "openai-responses", "anthropic", "gemini", "normalized"]),
    );
    expect(toolCalls.some((v) => v.error)).toBe(true);
    expect(toolCalls.some((v) => v.output?.some((c) => c.argumentsError))).toBe(true);
  });
});
