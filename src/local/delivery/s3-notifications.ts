import { randomBytes } from "node:crypto";
import type { S3EventRecord } from "aws-lambda";
import { encodeS3NotificationKey } from "../../sources/key-encoding.js";
import { LOCAL_REGION } from "../aws-local.js";
import type { S3rverEventRecord } from "../emulators/s3-server.js";

/** The options of `S3NotificationFactory`. */
export interface S3NotificationFactoryOptions {
  region?: string;
  /**
   * Give every created object a version id, as a versioned bucket does. s3rver keeps only the latest
   * object, so a GetObject by version id still returns the latest: the id is for identity and logs.
   */
  versioned?: boolean;
  /** The notification configuration's id. Default `eonce-local`. */
  configurationId?: string;
  /** The clock sequencers start from. Default `Date.now`. */
  now?: () => number;
}

/**
 * Turns s3rver's object events into S3 notification records as S3 sends them (schema 2.1):
 * form-URL-encoded keys (`+` for a space), sequencers that are unique and increase with every change of
 * a key (s3rver's is `Date.now()`, neither), request ids, the real bucket ARN, and version ids for a
 * versioned bucket.
 *
 * Sequencers are 18 upper-case hex digits: the change's millisecond shifted left by 20 bits plus a
 * counter, so they also increase across keys (S3 promises only per key) and never repeat in a process.
 */
export class S3NotificationFactory {
  readonly #region: string;
  readonly #versioned: boolean;
  readonly #configurationId: string;
  readonly #now: () => number;
  #last = 0n;

  constructor(options: S3NotificationFactoryOptions = {}) {
    this.#region = options.region ?? LOCAL_REGION;
    this.#versioned = options.versioned ?? false;
    this.#configurationId = options.configurationId ?? "eonce-local";
    this.#now = options.now ?? Date.now;
  }

  /** A new sequencer: 18 upper-case hex digits, greater than every one before. */
  nextSequencer(): string {
    const fromClock = BigInt(this.#now()) << 20n;
    this.#last = fromClock > this.#last ? fromClock : this.#last + 1n;
    return this.#last.toString(16).toUpperCase().padStart(18, "0");
  }

  /** The S3 notification record for one of s3rver's object events. */
  fromS3rver(raw: S3rverEventRecord): S3EventRecord {
    const created = raw.eventName.startsWith("ObjectCreated");
    const object: S3EventRecord["s3"]["object"] = {
      key: encodeS3NotificationKey(raw.s3.object.key),
      size: created ? (raw.s3.object.size ?? 0) : 0,
      eTag: raw.s3.object.eTag ?? "",
      sequencer: this.nextSequencer(),
    };
    // Delete records carry neither size nor eTag; Copy records from s3rver lack the eTag.
    const shaped: Record<string, unknown> = { ...object };
    if (!created) {
      delete shaped.size;
      delete shaped.eTag;
    } else if (!raw.s3.object.eTag) {
      delete shaped.eTag;
    }
    if (this.#versioned && created) shaped.versionId = versionId();
    const record = {
      eventVersion: "2.1",
      eventSource: "aws:s3",
      awsRegion: this.#region,
      eventTime: new Date(this.#now()).toISOString(),
      eventName: raw.eventName,
      userIdentity: { principalId: "AWS:LOCAL" },
      requestParameters: { sourceIPAddress: "127.0.0.1" },
      responseElements: {
        "x-amz-request-id": raw.responseElements["x-amz-request-id"] ?? requestId(),
        "x-amz-id-2": raw.responseElements["x-amz-id-2"] ?? randomBytes(48).toString("base64"),
      },
      s3: {
        s3SchemaVersion: "1.0",
        configurationId: this.#configurationId,
        bucket: {
          name: raw.s3.bucket.name,
          ownerIdentity: { principalId: "LOCAL" },
          arn: `arn:aws:s3:::${raw.s3.bucket.name}`,
        },
        object: shaped,
      },
    };
    return record as unknown as S3EventRecord;
  }
}

/** S3 request ids are 16 upper-case hex characters. */
function requestId(): string {
  return randomBytes(8).toString("hex").toUpperCase();
}

/** Version ids are 32 URL-safe characters. */
function versionId(): string {
  return randomBytes(24).toString("base64url");
}
