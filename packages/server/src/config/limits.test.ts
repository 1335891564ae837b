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

describe("resolveLimits: names that would be silently ignored", () => {
  const fileWith = (text: string) => {
    const dir = mkdtempSync(join(tmpdir(), "patchbay-limits-"));
    dirs.push(dir);
    writeFileSync(join(dir, "patchbay.yaml"), text);
    return dir;
  };
  const messageOf = (fn: () => unknown) => {
    try {
      fn();
    } catch (error) {
      expect(error).toMatchObject({ code: "invalid_config" });
      return (error as Error).message;
    }
    throw new Error("expected invalid_config");
  };

  it("refuses an unknown PATCHBAY_LIMIT_ variable, with the closest name", () => {
    expect(messageOf(() => resolveLimits({}, { PATCHBAY_LIMIT_MAX_SESSIONS_PER_USERX: "4" }))).toBe(
      "PATCHBAY_LIMIT_MAX_SESSIONS_PER_USERX=4: unknown limit (did you mean PATCHBAY_LIMIT_MAX_SESSIONS_PER_USER?); the names are in docs/security.md",
    );
    expect(messageOf(() => resolveLimits({}, { PATCHBAY_LIMIT_FOO: "1" }))).toMatch(
      /^PATCHBAY_LIMIT_FOO=1: unknown limit; /,
    );
  });

  it("refuses top-level keys of patchbay.yaml other than limits, saying where a setting goes", () => {
    const typo = fileWith("limit:\n  maxSessionsPerUser: 4\n");
    expect(messageOf(() => resolveLimits({}, {}, typo))).toBe(
      `${join(typo, "patchbay.yaml")}:1:1: unknown key 'limit' (did you mean 'limits'?); the file holds only limits:`,
    );
    const port = fileWith("limits: {}\nport: 19005\n");
    expect(messageOf(() => resolveLimits({}, {}, port))).toBe(
      `${join(port, "patchbay.yaml")}:2:1: 'port' is not a patchbay.yaml setting: pass --port (or PATCHBAY_PORT); the file holds only limits:`,
    );
    const dataDir = fileWith("data_dir: /srv\n");
    expect(messageOf(() => resolveLimits({}, {}, dataDir))).toContain(
      "pass --data-dir (or PATCHBAY_DATA_DIR)",
    );
    const limit = fileWith("limits:\n  maxSessionPerUser: 4\n");
    expect(messageOf(() => resolveLimits({}, {}, limit))).toContain(
      "limits: unknown limit 'maxSessionPerUser' (did you mean 'maxSessionsPerUser'?)",
    );
  });

  it("names the file, line and column of a YAML syntax error; an empty file or limits: is fine", () => {
    const broken = fileWith("limits:\n  maxSessionsPerUser: 4\n   maxEnumValues: 3\n");
    expect(messageOf(() => resolveLimits({}, {}, broken))).toMatch(
      new RegExp(
        `^${join(broken, "patchbay.yaml").replaceAll(".", "\\.")}:2:23: YAML syntax error: Nested mappings`,
      ),
    );
    expect(resolveLimits({}, {}, fileWith("# nothing yet\n")).maxSessionsPerUser).toBe(1_000);
    expect(resolveLimits({}, {}, fileWith("limits:\n")).maxSessionsPerUser).toBe(1_000);
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
