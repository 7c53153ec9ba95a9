import { describe, expect, it } from "vitest";
import { MalformedEventError } from "../../src/core/errors.js";
import {
  decodeS3NotificationKey,
  encodeS3NotificationKey,
  MAX_S3_KEY_BYTES,
} from "../../src/sources/index.js";

describe("encodeS3NotificationKey", () => {
  it.each([
    ["red flower.jpg", "red+flower.jpg"], // the example in the S3 docs
    ["c++/a+b.txt", "c%2B%2B/a%2Bb.txt"],
    ["100%.txt", "100%25.txt"],
    ["year=2025/red flower.jpg", "year%3D2025/red+flower.jpg"],
    ["10:47:07.log", "10%3A47%3A07.log"],
    ["image (1).jpg", "image+%281%29.jpg"],
    ["ü", "%C3%BC"],
    ["😀", "%F0%9F%98%80"],
    ["a~b!c'd*e-f_g.h", "a%7Eb%21c%27d*e-f_g.h"],
    ["a/b//c/", "a/b//c/"],
  ])("%j → %j", (key, encoded) => {
    expect(encodeS3NotificationKey(key)).toBe(encoded);
  });

  it("refuses a string that is not well-formed Unicode (no S3 key can be one)", () => {
    expect(() => encodeS3NotificationKey("a\uD800b")).toThrow(MalformedEventError);
  });
});

describe("decodeS3NotificationKey", () => {
  it.each([
    ["red+flower.jpg", "red flower.jpg"],
    ["a%2Bb", "a+b"],
    ["a%20b", "a b"], // %20 is also a space
    ["%25", "%"],
    ["%e6%97%a5", "日"],
    ["a%2Fb", "a/b"],
  ])("%j → %j", (encoded, key) => {
    expect(decodeS3NotificationKey(encoded, "key")).toBe(key);
  });

  it.each([
    ["%", /invalid percent escape "%" at character 0/],
    ["a%2", /invalid percent escape "%2" at character 1/],
    ["a%%41", /invalid percent escape "%%4" at character 1/],
    ["%FF", /not valid UTF-8/],
    ["%ED%A0%80", /not valid UTF-8/], // an encoded lone surrogate
    ["+", undefined], // a single space is a valid key
  ])("%j", (encoded, message) => {
    if (message === undefined) {
      expect(decodeS3NotificationKey(encoded, "key")).toBe(" ");
      return;
    }
    expect(() => decodeS3NotificationKey(encoded, "Records[0].s3.object.key")).toThrow(message);
    try {
      decodeS3NotificationKey(encoded, "Records[0].s3.object.key");
    } catch (e) {
      expect((e as MalformedEventError).path).toBe("Records[0].s3.object.key");
    }
  });

  it("limits the decoded key, not the encoded one, to 1,024 bytes", () => {
    const key = "日".repeat(341); // 1,023 bytes, 2,727 characters encoded
    expect(encodeS3NotificationKey(key).length).toBeGreaterThan(MAX_S3_KEY_BYTES);
    expect(decodeS3NotificationKey(encodeS3NotificationKey(key), "k")).toBe(key);
    expect(() => decodeS3NotificationKey(encodeS3NotificationKey(`${key}ab`), "k")).toThrow(/1025 bytes/);
  });

  it("rejects an empty key", () => {
    expect(() => decodeS3NotificationKey("", "k")).toThrow(/key is empty/);
  });
});
