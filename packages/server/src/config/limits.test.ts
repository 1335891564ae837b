import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  checkMessageQuotas,
  DEFAULT_SERVER_LIMITS,
  parseLimitFlags,
  QuotaError,
  resolveLimits,
} from "./limits";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("resolveLimits", () => {
  it("takes code over the environment over patchbay.yaml over the defaults", () => {
    const dir = mkdtempSync(join(tmpdir(), "patchbay-limits-"));
    dirs.push(dir);
    writeFileSync(
      join(dir, "patchbay.yaml"),
      "limits:\n  maxSessionsPerUser: 7\n  max-message-bytes: 100\n  maxEnumValues: 9\n",
    );
    const limits = resolveLimits(
      { maxEnumValues: 11 },
      { PATCHBAY_LIMIT_MAX_MESSAGE_BYTES: "200", PATCHBAY_LIMIT_ALLOW_PRIVATE_IMAGE_URLS: "1" },
      dir,
    );
    expect(limits.maxSessionsPerUser).toBe(7);
    expect(limits.maxMessageBytes).toBe(200);
    expect(limits.maxEnumValues).toBe(11);
    expect(limits.allowPrivateImageUrls).toBe(1);
    expect(limits.maxToolsPerSession).toBe(DEFAULT_SERVER_LIMITS.maxToolsPerSession);
  });

  it("refuses unknown names and bad values, naming them", () => {
    expect(() => resolveLimits({ maxSessionsPerUser: 0 }, {})).toThrow(/maxSessionsPerUser.*from 1/);
    expect(() => resolveLimits({}, { PATCHBAY_LIMIT_MAX_MESSAGE_BYTES: "lots" })).toThrow(
      /PATCHBAY_LIMIT_MAX_MESSAGE_BYTES/,
    );
    expect(() => resolveLimits({ nope: 1 } as never, {})).toThrow(/unknown limit 'nope'/);
    expect(parseLimitFlags(["max-message-bytes=65536", "maxSessionsPerUser=3"])).toEqual({
      maxMessageBytes: 65536,
      maxSessionsPerUser: 3,
    });
    expect(() => parseLimitFlags(["bogus=1"])).toThrow(/expected name=value/);
  });
});

describe("checkMessageQuotas", () => {
  const limits = { maxMessageBytes: 10, maxConversationItems: 3, maxConversationBytes: 100 };
  it("names the limit a message hits", () => {
    const hit = (text: string, items: number, bytes: number) => {
      try {
        checkMessageQuotas({ text }, { items, bytes }, limits);
        return undefined;
      } catch (error) {
        expect(error).toBeInstanceOf(QuotaError);
        return [(error as QuotaError).code, (error as QuotaError).limit];
      }
    };
    expect(hit("hello", 0, 0)).toBeUndefined();
    expect(hit("é".repeat(6), 0, 0)).toEqual(["quota_exceeded", "maxMessageBytes"]);
    expect(hit("hi", 3, 0)).toEqual(["quota_exceeded", "maxConversationItems"]);
    expect(hit("hi", 0, 99)).toEqual(["quota_exceeded", "maxConversationBytes"]);
  });
});
