import { describe, expect, it } from "vitest";
import type { S3ObjectEvent } from "../../src/core/event.js";
import { compareSequencers } from "../../src/core/position.js";
import { toEventBridgeEvent } from "../../src/local/delivery/eventbridge-envelope.js";
import { S3NotificationFactory } from "../../src/local/delivery/s3-notifications.js";
import type { S3rverEventRecord } from "../../src/local/emulators/s3-server.js";
import { parseInvocation } from "../../src/sources/parse-invocation.js";

/** A record as s3rver emits it: raw key, `Date.now()` sequencer, odd ARN. */
function raw(
  key: string,
  eventName: S3rverEventRecord["eventName"] = "ObjectCreated:Put",
  requestId = "A1B2C3",
): S3rverEventRecord {
  return {
    eventVersion: "2.0",
    eventSource: "aws:s3",
    awsRegion: "us-east-1",
    eventTime: new Date().toISOString(),
    eventName,
    userIdentity: { principalId: "AWS:X" },
    requestParameters: { sourceIPAddress: "127.0.0.1" },
    responseElements: { "x-amz-request-id": requestId, "x-amz-id-2": "abc=" },
    s3: {
      s3SchemaVersion: "1.0",
      configurationId: "testConfigId",
      bucket: { name: "in-bucket", ownerIdentity: { principalId: "X" }, arn: "arn:aws:s3: : :in-bucket" },
      object: eventName.startsWith("ObjectCreated")
        ? { key, sequencer: "1A1FDCC4355", size: 5, eTag: "5d41402abc4b2a76b9719d911017c592" }
        : { key, sequencer: "1A1FDCC4355" },
    },
  };
}

const s3Event = (input: unknown): S3ObjectEvent => {
  const [unit] = parseInvocation(input);
  expect(unit?.error).toBeUndefined();
  const e = unit?.events[0];
  if (e?.kind !== "s3") throw new Error("expected an S3 event");
  return e;
};

describe("S3 notifications from s3rver events", () => {
  it("makes schema-2.1 records with a form-URL-encoded key, real ARN and request ids", () => {
    const f = new S3NotificationFactory();
    const record = f.fromS3rver(raw("in/a b+c/é.txt"));
    expect(record.eventVersion).toBe("2.1");
    expect(record.s3.object.key).toBe("in/a+b%2Bc/%C3%A9.txt");
    expect(record.s3.bucket.arn).toBe("arn:aws:s3:::in-bucket");
    expect(record.responseElements["x-amz-request-id"]).toBe("A1B2C3");
    expect(record.s3.object).not.toHaveProperty("versionId");
    // The sources module decodes it back to the stored key.
    const e = s3Event({ Records: [record] });
    expect(e).toMatchObject({
      key: "in/a b+c/é.txt",
      bucket: "in-bucket",
      operation: "created",
      requestId: "A1B2C3",
    });
  });

  it("gives unique, increasing sequencers even within one millisecond", () => {
    const f = new S3NotificationFactory({ now: () => 1_700_000_000_000 });
    const seqs = Array.from({ length: 50 }, () => f.fromS3rver(raw("k")).s3.object.sequencer);
    expect(new Set(seqs).size).toBe(50);
    for (let i = 1; i < seqs.length; i++) {
      expect(compareSequencers(seqs[i - 1] as string, seqs[i] as string)).toBeLessThan(0);
    }
    for (const s of seqs) expect(s).toMatch(/^[0-9A-F]{18}$/);
  });

  it("keeps increasing when the clock goes backwards", () => {
    let now = 2_000_000;
    const f = new S3NotificationFactory({ now: () => now });
    const a = f.nextSequencer();
    now = 1_000_000;
    expect(compareSequencers(a, f.nextSequencer())).toBeLessThan(0);
  });

  it("adds version ids for a versioned bucket, and drops size and eTag from deletes", () => {
    const f = new S3NotificationFactory({ versioned: true });
    const created = f.fromS3rver(raw("k")).s3.object as { versionId?: string };
    expect(created.versionId).toMatch(/^[A-Za-z0-9_-]{32}$/);
    const removed = f.fromS3rver(raw("k", "ObjectRemoved:Delete")).s3.object;
    expect(removed).not.toHaveProperty("size");
    expect(removed).not.toHaveProperty("eTag");
    expect(s3Event({ Records: [f.fromS3rver(raw("k", "ObjectRemoved:Delete"))] }).operation).toBe("removed");
  });

  it("wraps the same change in an EventBridge envelope with the raw key and the same sequencer", () => {
    const f = new S3NotificationFactory();
    const record = f.fromS3rver(raw("a b+c.png"));
    const envelope = toEventBridgeEvent(record);
    expect(envelope).toMatchObject({ source: "aws.s3", "detail-type": "Object Created" });
    const viaS3 = s3Event({ Records: [record] });
    const viaEventBridge = s3Event(envelope);
    expect(viaEventBridge.key).toBe("a b+c.png");
    expect(viaEventBridge.position).toBe(viaS3.position);
    expect(viaEventBridge.identity).toBe(viaS3.identity);
    expect(toEventBridgeEvent(f.fromS3rver(raw("a", "ObjectRemoved:Delete")))["detail-type"]).toBe(
      "Object Deleted",
    );
  });
});
