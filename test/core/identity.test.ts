import { describe, expect, it } from "vitest";
import { s3Identity, s3Operation } from "../../src/core/identity.js";

describe("s3Operation", () => {
  it.each([
    ["ObjectCreated:Put", "created"],
    ["ObjectCreated:CompleteMultipartUpload", "created"],
    ["s3:ObjectCreated:Copy", "created"],
    ["Object Created", "created"],
    ["ObjectRemoved:Delete", "removed"],
    ["ObjectRemoved:DeleteMarkerCreated", "removed"],
    ["Object Deleted", "removed"],
    ["LifecycleExpiration:Delete", "removed"],
    ["LifecycleExpiration:DeleteMarkerCreated", "removed"],
    ["LifecycleTransition", "other"],
    ["ObjectTagging:Put", "other"],
    ["ObjectRestore:Completed", "other"],
    ["Object Restore Completed", "other"],
  ])("%s → %s", (name, op) => {
    expect(s3Operation(name)).toBe(op);
  });
});

describe("s3Identity", () => {
  const base = {
    bucket: "b",
    key: "k",
    eventName: "ObjectTagging:Put",
    eventTime: "2026-01-01T00:00:00.000Z",
  };
  it("uses position and operation when there is a sequencer", () => {
    expect(s3Identity({ ...base, position: "00AB", operation: "created" })).toBe("00AB:created");
  });
  it("hashes what tells events apart when there is none", () => {
    const a = s3Identity({ ...base, operation: "other", requestId: "r1" });
    expect(a).toMatch(/^h:[\w-]{32}$/);
    expect(s3Identity({ ...base, operation: "other", requestId: "r1" })).toBe(a);
    expect(s3Identity({ ...base, operation: "other", requestId: "r2" })).not.toBe(a);
    expect(s3Identity({ ...base, operation: "other", requestId: "r1", versionId: "v2" })).not.toBe(a);
    // Field boundaries matter: moving a character from key to bucket is another event.
    expect(s3Identity({ ...base, bucket: "bk", key: "", operation: "other", requestId: "r1" })).not.toBe(
      s3Identity({ ...base, bucket: "b", key: "k", operation: "other", requestId: "r1" }),
    );
  });
});
