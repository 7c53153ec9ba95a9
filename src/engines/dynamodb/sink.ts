import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  type Put,
  PutItemCommand,
} from "@aws-sdk/client-dynamodb";
import { marshall, unmarshall } from "@aws-sdk/util-dynamodb";
import { OptionsError, StoreError } from "../../core/errors.js";
import { type FenceSource, fencedPosition, type SinkWriteStatus } from "../../core/fence.js";
import { requireKeyText } from "../../core/key-text.js";
import { oneOf, resolveOptions, schemaFor, string } from "../../core/options.js";
import { UNORDERED_POSITION } from "../../core/state.js";
import type { DynamoDBAtomicWrite } from "./atomic-write.js";
import { DYNAMODB_TABLE_FIELDS } from "./options.js";
import { describeKey, type KeyValue, type RowKey } from "./sink-key.js";
import {
  attributeItem,
  DYNAMODB_MAX_HASH_KEY_BYTES,
  DYNAMODB_MAX_SORT_KEY_BYTES,
  keyValueProblem,
} from "./values.js";

export type { FenceSource, SinkWriteStatus } from "../../core/fence.js";
export type { KeyValue, RowKey } from "./sink-key.js";

const SINK = "DynamoDBFencedSink";

/** The options of `DynamoDBFencedSink`. */
export interface DynamoDBFencedSinkOptions {
  client: DynamoDBClient;
  tableName: string;
  /** Hash key attribute of the sink table. Default `pk`. */
  keyAttribute?: string;
  /** Range (sort) key attribute, for a table with a composite key. Default: none (a hash key only). */
  sortKeyAttribute?: string;
  /** Where the writing event's position is kept. Default `srcPos`. */
  positionAttribute?: string;
  /** Where the writing claim's fence is kept (tie-break between two runs of one event). Default `srcFence`. */
  fenceAttribute?: string;
  /**
   * A row with neither the position nor the fence attribute was written by something else (a backfill, another
   * writer). `overwrite` (default): it counts as older than any event, so the first fenced write replaces it and
   * fences it from then on. `keep`: it is never overwritten, and the write is reported `stale`. Rows the sink wrote
   * always follow the rule, whatever this says (a row with a fence but no position, as tombstones without a position
   * were once written, holds the empty position).
   */
  unfencedRows?: "overwrite" | "keep";
}

const FENCED_SINK_OPTIONS = schemaFor<DynamoDBFencedSinkOptions>()({
  ...DYNAMODB_TABLE_FIELDS,
  keyAttribute: string({ default: "pk" }),
  sortKeyAttribute: string(),
  positionAttribute: string({ default: "srcPos" }),
  fenceAttribute: string({ default: "srcFence" }),
  unfencedRows: oneOf(["overwrite", "keep"], { default: "overwrite" }),
});

/**
 * Writes to a DynamoDB table so that results land in position order whatever the arrival order:
 * every put is conditional on the row holding an older position (or the same position from an older
 * claim), so a late or zombie run can never overwrite newer work. One row must be written by one
 * subject only: positions are only comparable within a subject.
 *
 * One rule for every write, put or tombstone: it carries (position, fence) and lands only over a row holding an
 * older one (a lower position, or the same position and a lower fence). Edges, defined:
 * - events without a position write the empty position, which sorts before every real one: any positioned write
 *   wins over them, and between two of them the later claim wins (fences come from the claimer's clock: see
 *   src/core/state.ts). A removal without a position is such a write too: it removes a row written without a
 *   position by an older claim, and is `stale` over a positioned row;
 * - a row written by something else (no position, no fence): see `unfencedRows`.
 */
export class DynamoDBFencedSink {
  readonly #client: DynamoDBClient;
  readonly #table: string;
  readonly #key: string;
  readonly #sortKey: string | undefined;
  readonly #pos: string;
  readonly #fence: string;
  readonly #overwriteUnfenced: boolean;

  constructor(options: DynamoDBFencedSinkOptions) {
    const o = resolveOptions(SINK, FENCED_SINK_OPTIONS, options);
    this.#client = o.client;
    this.#table = o.tableName;
    this.#key = o.keyAttribute;
    this.#sortKey = o.sortKeyAttribute;
    this.#pos = o.positionAttribute;
    this.#fence = o.fenceAttribute;
    this.#overwriteUnfenced = o.unfencedRows === "overwrite";
  }

  /** The sink's table. */
  get tableName(): string {
    return this.#table;
  }

  /** The conditional Put for `item` written by the claim in `ctx`. */
  putRequest(ctx: FenceSource, item: Record<string, unknown>): Put {
    this.#keyOf(item); // the item must carry its whole key
    const position = fencedPosition(SINK, ctx);
    return {
      TableName: this.#table,
      // Checked when built: a value DynamoDB refuses throws OptionsError here, never at the commit.
      Item: attributeItem(`${SINK}: item`, { ...item, [this.#pos]: position, [this.#fence]: ctx.fence }),
      ConditionExpression: this.#olderRow(position),
      ExpressionAttributeNames: { "#k": this.#key, "#p": this.#pos, "#f": this.#fence },
      ExpressionAttributeValues: { ":p": { S: position }, ":f": { N: String(ctx.fence) } },
    };
  }

  /**
   * The row holds an older stamp than (`position`, :f): none, a foreign row (with `unfencedRows: "overwrite"`), a
   * lower position, or the same position and a lower fence. A row with a fence but no position holds the empty
   * position: any positioned write is newer, a positionless one only from a later claim.
   */
  #olderRow(position: string): string {
    const foreign = this.#overwriteUnfenced
      ? " OR (attribute_not_exists(#p) AND attribute_not_exists(#f))"
      : "";
    const noPosition =
      position === UNORDERED_POSITION
        ? " OR (attribute_not_exists(#p) AND #f < :f)"
        : " OR (attribute_not_exists(#p) AND attribute_exists(#f)) OR #p < :p";
    return `attribute_not_exists(#k)${foreign}${noPosition} OR (#p = :p AND (attribute_not_exists(#f) OR #f < :f))`;
  }

  /** A fenced put now, in its own request. `stale` when the row already holds newer work. */
  async put(ctx: FenceSource, item: Record<string, unknown>): Promise<SinkWriteStatus> {
    const request = this.putRequest(ctx, item); // bad input throws here, not as a store failure
    try {
      await this.#client.send(new PutItemCommand(request));
      return "applied";
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return "stale";
      throw new StoreError(`fenced put to ${this.#table} failed`, { cause: error });
    }
  }

  /** The same put as an effect folded into the guard's commit (one TransactWriteItems: effect and commit). */
  atomicPut(ctx: FenceSource, item: Record<string, unknown>): DynamoDBAtomicWrite {
    const put = this.putRequest(ctx, item);
    return {
      engine: "dynamodb",
      description: `put ${this.#table}/${describeKey(this.#keyOf(item))}`,
      item: { Put: put },
    };
  }

  /** Queues the put on the guard's context, to be applied atomically with the commit. */
  putAtCommit(
    ctx: FenceSource & { atCommit(write: DynamoDBAtomicWrite): void },
    item: Record<string, unknown>,
  ): void {
    ctx.atCommit(this.atomicPut(ctx, item));
  }

  /**
   * For a removal event: a put of the key and `attributes` with `deleted: true`. The tombstone keeps the position, so
   * an older create arriving late cannot resurrect the row (a plain DeleteItem would forget the position). It is
   * fenced as any put: without a position it is the empty position's write (see the class comment).
   */
  async tombstone(
    ctx: FenceSource,
    key: RowKey,
    attributes: Record<string, unknown> = {},
  ): Promise<SinkWriteStatus> {
    const keyAttributes = this.#keyOf(typeof key === "object" ? key : { [this.#key]: key });
    return this.put(ctx, { ...attributes, ...keyAttributes, deleted: true });
  }

  /** The row at `key` (its hash key value, or the whole key), read consistently; undefined when absent. */
  async get(key: RowKey): Promise<Record<string, unknown> | undefined> {
    const Key = marshall(this.#keyOf(typeof key === "object" ? key : { [this.#key]: key }));
    const out = await this.#client.send(
      new GetItemCommand({ TableName: this.#table, Key, ConsistentRead: true }),
    );
    return out.Item ? unmarshall(out.Item) : undefined;
  }

  /**
   * The key attributes of `item` (hash, and sort on a composite key): each a non-empty string (a hash key up to 2 KB,
   * a sort key up to 1 KB) or a number; a string follows the key rule (src/core/key-text.ts).
   */
  #keyOf(item: Record<string, unknown>): Record<string, KeyValue> {
    const names = this.#sortKey === undefined ? [this.#key] : [this.#key, this.#sortKey];
    const key: Record<string, KeyValue> = {};
    names.forEach((name, i) => {
      const value = item[name];
      const problem = keyValueProblem(
        value,
        i === 0 ? DYNAMODB_MAX_HASH_KEY_BYTES : DYNAMODB_MAX_SORT_KEY_BYTES,
      );
      if (problem) {
        throw new OptionsError(
          `${SINK}: item needs a string or number "${name}" (a key attribute): it ${problem}`,
        );
      }
      if (typeof value === "string") requireKeyText("sink key", value);
      key[name] = value as KeyValue;
    });
    return key;
  }
}

export { type DynamoDBUpdateEffect, updateEffect } from "./sink-update.js";
