import type { S3EventRecord } from "aws-lambda";
import { s3Identity, s3Subject } from "../src/core/identity.js";
import { normalizeSequencer, type Position } from "../src/core/position.js";
import { s3Record } from "../test/kit/events.js";

/** One S3 "object created" event as every implementation sees it. */
export interface BenchEvent {
  bucket: string;
  key: string;
  /** 1, 2, … per key: a higher version was uploaded later and has a greater sequencer. */
  version: number;
  /** As S3 sends it: 16 hex digits here, so plain string comparison (the AWS sample's) is also correct. */
  sequencer: string;
  /** `bucket/key`. */
  subject: string;
  position: Position;
  identity: string;
  /** The notification record, for implementations that take the raw payload (Powertools hashes part of it). */
  record: S3EventRecord;
}

export const BUCKET = "bench-input";
const SEQUENCER_BASE = 0x0062a1b2c3d40000n;

export function makeEvent(key: string, version: number): BenchEvent {
  const sequencer = (SEQUENCER_BASE + BigInt(version)).toString(16).toUpperCase().padStart(16, "0");
  const position = normalizeSequencer(sequencer);
  const eventTime = new Date(Date.UTC(2026, 10, 21, 12, 0, 0, version)).toISOString();
  const record = s3Record({
    encodedKey: key,
    bucket: BUCKET,
    sequencer,
    eventTime,
    requestId: `REQ${version}`,
    eTag: `etag-${version}`,
  });
  return {
    bucket: BUCKET,
    key,
    version,
    sequencer,
    subject: s3Subject(BUCKET, key),
    position,
    identity: s3Identity({
      bucket: BUCKET,
      key,
      position,
      operation: "created",
      eventName: record.eventName,
      eventTime,
    }),
    record,
  };
}

/** Deterministic PRNG (mulberry32), so every implementation sees the same order and handler durations. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function shuffle<T>(items: T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}
