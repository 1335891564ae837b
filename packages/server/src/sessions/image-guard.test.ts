import { describe, expect, it } from "vitest";
import { checkImages, isPrivateHost } from "./image-guard";

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]).toString("base64");

describe("checkImages", () => {
  it("takes data whose bytes are the declared type and public https URLs", () => {
    expect(() =>
      checkImages(
        [
          { type: "image", mimeType: "image/png", data: PNG },
          { type: "image", url: "https://example.com/a.png" },
        ],
        false,
      ),
    ).not.toThrow();
  });

  it("refuses a shell script labelled image/png, naming the path", () => {
    const script = Buffer.from("#!/bin/sh\nrm -rf /\n").toString("base64");
    expect(() => checkImages([{ type: "image", mimeType: "image/png", data: script }], false)).toThrow(
      /images\.0\.data: the bytes are not image\/png/,
    );
    expect(() => checkImages([{ type: "image", mimeType: "image/jpeg", data: PNG }], false)).toThrow(
      /not image\/jpeg/,
    );
  });

  it("refuses private, loopback and link-local URLs unless allowed", () => {
    for (const url of [
      "https://169.254.169.254/latest/meta-data",
      "https://127.0.0.1/a.png",
      "https://10.1.2.3/a.png",
      "https://192.168.0.1/a.png",
      "https://localhost/a.png",
      "https://[::1]/a.png",
      "https://[fe80::1]/a.png",
      "https://[::ffff:169.254.169.254]/a.png",
      "https://2852039166/a.png",
    ]) {
      expect(() => checkImages([{ type: "image", url }], false), url).toThrow(/images\.0\.url/);
      expect(() => checkImages([{ type: "image", url }], true), url).not.toThrow();
    }
    expect(isPrivateHost("example.com")).toBe(false);
    expect(isPrivateHost("8.8.8.8")).toBe(false);
  });
});
