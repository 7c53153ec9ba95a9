import { createHash } from "node:crypto";
import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  TransactionCanceledException,
  type TransactWriteItem,
  TransactWriteItemsCommand,
  type Update,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { StoreError, UnsupportedAtomicWriteError } from "../../core/errors.js";
import { rejectUnknownKeys } from "../../core/options.js";
import type { ClaimRequest, StateRecord, StateStatus } from "../../core/state.js";
import type {
  AtomicWrite,
  ClaimAndCommitRequest,
  ClaimAndCommitResult,
  ClaimResult,
  CommitRequest,
  CommitResult,
  FencedRequest,
  StateStore,
  WriteOutcome,
} from "../contract.js";
import { type DynamoDBAtomicWrite, isDynamoDBAtomicWrite } from "./atomic-write.js";
import { STATE_KEY_ATTRIBUTE, TTL_ATTRIBUTE } from "./schema.js";

export interface DynamoDBStoreOptions {
  client: DynamoDBClient;
  tableName: string;
}

type Item = Record<string, AttributeValue>;

const NAMES = {
  "#pk": STATE_KEY_ATTRIBUTE,
  "#st": "status",
  "#pos": "pos",
  "#eid": "eid",
  "#fence": "fence",
  "#lease": "leaseUntil",
  "#cpos": "cpos",
  "#ceid": "ceid",
  "#res": "result",
  "#exp": TTL_ATTRIBUTE,
};

const S = (s: string): AttributeValue => ({ S: s });
const N = (n: number): AttributeValue => ({ N: String(n) });

/** Attempts are counted per identity in an attribute named after it, so one UpdateItem both claims and counts. */
export function attemptAttribute(identity: string): string {
  return `n_${createHash("sha256").update(identity).digest("base64url").slice(0, 16)}`;
}

/**
 * The state store on DynamoDB. Each operation is one request: a conditional UpdateItem that returns the
 * old item on refusal (`ReturnValuesOnConditionCheckFailure: ALL_OLD`), so refusals cost no extra read.
 * A consistent GetItem is the fallback only when the refusal carries no item.
 */
export class DynamoDBStore implements StateStore {
  readonly engine = "dynamodb";
  readonly #client: DynamoDBClient;
  readonly #table: string;

  constructor(options: DynamoDBStoreOptions) {
    rejectUnknownKeys("DynamoDBStore", options, ["client", "tableName"]);
    if (!options.client) throw new StoreError("DynamoDBStore: client is required");
    if (!options.tableName) throw new StoreError("DynamoDBStore: tableName is required");
    this.#client = options.client;
    this.#table = options.tableName;
  }

  get tableName(): string {
    return this.#table;
  }

  async claim(req: ClaimRequest): Promise<ClaimResult> {
    const att = attemptAttribute(req.identity);
    const update =
      "SET #st = :running, #pos = :pos, #eid = :eid, #fence = if_not_exists(#fence, :zero) + :one, " +
      "#lease = :lease, #exp = :exp ADD #att :one";
    const condition = claimCondition(req);
    try {
      const out = await this.#client.send(
        new UpdateItemCommand({
          ...stateUpdate(this.#table, req, update, condition, {
            ":running": S("running"),
            ":pos": S(req.position),
            ":eid": S(req.identity),
            ":zero": N(0),
            ":one": N(1),
            ":lease": N(req.leaseUntilMs),
            ":exp": N(req.expiresAtSeconds),
            ":now": N(req.nowMs),
          }),
          // The old item tells a takeover or supersede apart from a fresh claim, at no extra cost.
          ReturnValues: "ALL_OLD",
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        }),
      );
      const old = out.Attributes && Object.keys(out.Attributes).length > 0 ? out.Attributes : undefined;
      const previous = old ? toRecord(old, req.identity) : undefined;
      const oldAttempts = old?.[att]?.N ? Number(old[att].N) : 0;
      return { claimed: true, fence: (previous?.fence ?? 0) + 1, attempt: oldAttempts + 1, previous };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        const state = error.Item
          ? toRecord(error.Item, req.identity)
          : await this.read(req.key, req.identity);
        if (!state) throw new StoreError(`claim of ${req.key} refused but the item is gone; retry`);
        return { claimed: false, state };
      }
      throw wrap("claim", req.key, error);
    }
  }

  async claimAndCommit(req: ClaimAndCommitRequest): Promise<ClaimAndCommitResult> {
    const values: Item = {
      ":done": S("done"),
      ":running": S("running"),
      ":pos": S(req.position),
      ":eid": S(req.identity),
      ":zero": N(0),
      ":one": N(1),
      ":exp": N(req.expiresAtSeconds),
      ":now": N(req.nowMs),
    };
    let set =
      "SET #st = :done, #pos = :pos, #eid = :eid, #cpos = :pos, #ceid = :eid, " +
      "#fence = if_not_exists(#fence, :zero) + :one, #exp = :exp";
    let remove = "REMOVE #lease, #att";
    if (req.result !== undefined) {
      set += ", #res = :res";
      values[":res"] = S(req.result);
    } else {
      remove += ", #res";
    }
    const update = `${set} ${remove}`;
    const condition = claimCondition(req);
    const input = stateUpdate(this.#table, req, update, condition, values);
    const refused = async (item: Item | undefined) => {
      const state = item ? toRecord(item, req.identity) : await this.read(req.key, req.identity);
      if (!state) throw new StoreError(`claim of ${req.key} refused but the item is gone; retry`);
      return { claimed: false as const, state };
    };
    const outcome = await this.#transact("claimAndCommit", req.key, input, dynamoWrites(req.writes));
    return outcome.ok ? { claimed: true, writes: outcome.writes } : refused(outcome.item);
  }

  async renew(req: FencedRequest & { leaseUntilMs: number }): Promise<boolean> {
    return this.#fenced("renew", req, "SET #lease = :lease", { ":lease": N(req.leaseUntilMs) });
  }

  async release(req: FencedRequest): Promise<boolean> {
    return this.#fenced("release", req, "SET #st = :released REMOVE #lease", { ":released": S("released") });
  }

  async commit(req: CommitRequest): Promise<CommitResult> {
    const outcome = await this.#transact(
      "commit",
      req.key,
      commitUpdate(this.#table, req),
      dynamoWrites(req.writes),
    );
    if (outcome.ok) return { committed: true, writes: outcome.writes };
    return { committed: false, state: outcome.item ? toRecord(outcome.item) : undefined };
  }

  /**
   * The state update alone (one UpdateItem), or with effects in one TransactWriteItems. A write refused by its own
   * (fencing) condition means its target already holds a newer position: the update goes ahead without it, and the
   * write is reported stale. `ok: false` is the state update's own condition failing, with the old item.
   */
  async #transact(
    op: string,
    key: string,
    update: Update & { TableName: string },
    writes: DynamoDBAtomicWrite[],
  ): Promise<{ ok: true; writes: WriteOutcome[] } | { ok: false; item?: Item }> {
    let pending = writes;
    const stale: WriteOutcome[] = [];
    for (;;) {
      try {
        if (pending.length === 0) {
          await this.#client.send(
            new UpdateItemCommand({ ...update, ReturnValuesOnConditionCheckFailure: "ALL_OLD" }),
          );
        } else {
          await this.#client.send(
            new TransactWriteItemsCommand({
              TransactItems: [
                { Update: { ...update, ReturnValuesOnConditionCheckFailure: "ALL_OLD" } },
                ...pending.map((w) => withOldItemOnFailure(w.item)),
              ],
            }),
          );
        }
        const applied = pending.map((w) => ({ description: w.description, status: "applied" as const }));
        return { ok: true, writes: [...applied, ...stale] };
      } catch (error) {
        if (error instanceof ConditionalCheckFailedException) return { ok: false, item: error.Item };
        if (!(error instanceof TransactionCanceledException)) throw wrap(op, key, error);
        const reasons = error.CancellationReasons ?? [];
        if (reasons[0]?.Code === "ConditionalCheckFailed") return { ok: false, item: reasons[0].Item };
        const refused = pending.filter((_, i) => reasons[i + 1]?.Code === "ConditionalCheckFailed");
        if (refused.length === 0) throw wrap(op, key, error); // conflict or throttling: transient
        for (const w of refused) stale.push({ description: w.description, status: "stale" });
        pending = pending.filter((w) => !refused.includes(w));
      }
    }
  }

  async #fenced(op: string, req: FencedRequest, expression: string, values: Item): Promise<boolean> {
    try {
      await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: { [STATE_KEY_ATTRIBUTE]: S(req.key) },
          UpdateExpression: expression,
          ConditionExpression: "#fence = :fence AND #st = :running",
          ExpressionAttributeNames: pick(NAMES, `${expression} #fence #st`),
          ExpressionAttributeValues: { ...values, ":fence": N(req.fence), ":running": S("running") },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw wrap(op, req.key, error);
    }
  }

  async read(key: string, identity?: string): Promise<StateRecord | undefined> {
    try {
      const out = await this.#client.send(
        new GetItemCommand({
          TableName: this.#table,
          Key: { [STATE_KEY_ATTRIBUTE]: S(key) },
          ConsistentRead: true,
        }),
      );
      return out.Item ? toRecord(out.Item, identity) : undefined;
    } catch (error) {
      throw wrap("read", key, error);
    }
  }

  canFold(write: AtomicWrite): boolean {
    return isDynamoDBAtomicWrite(write);
  }
}

function commitUpdate(table: string, req: CommitRequest) {
  const values: Item = {
    ":done": S("done"),
    ":running": S("running"),
    ":fence": N(req.fence),
    ":exp": N(req.expiresAtSeconds),
  };
  let set = "SET #st = :done, #cpos = #pos, #ceid = #eid, #exp = :exp";
  let remove = "REMOVE #lease";
  if (req.result !== undefined) {
    set += ", #res = :res";
    values[":res"] = S(req.result);
  } else {
    remove += ", #res";
  }
  // The attempt counter of the committed identity is dropped: it is only needed while retrying.
  const update = `${set} ${remove}, #att`;
  const condition = "#fence = :fence AND #st = :running";
  return stateUpdate(table, req, update, condition, values);
}

/** An UpdateItem input on one state item; `#att` names the attempt counter of `req.identity`. */
function stateUpdate(
  table: string,
  req: { key: string; identity: string },
  update: string,
  condition: string,
  values: Item,
): Update & { TableName: string } {
  return {
    TableName: table,
    Key: { [STATE_KEY_ATTRIBUTE]: S(req.key) },
    UpdateExpression: update,
    ConditionExpression: condition,
    ExpressionAttributeNames: {
      ...pick(NAMES, `${update} ${condition}`),
      "#att": attemptAttribute(req.identity),
    },
    ExpressionAttributeValues: values,
  };
}

/**
 * The claim condition (src/core/state.ts): the item is absent, or no live holder (or, with supersede, an older one)
 * and the position is newer than the committed one.
 */
function claimCondition(req: ClaimRequest): string {
  const holderGone = req.supersede
    ? "(#st <> :running OR #lease < :now OR #pos < :pos)"
    : "(#st <> :running OR #lease < :now)";
  return `attribute_not_exists(#pk) OR (${holderGone} AND (attribute_not_exists(#cpos) OR #cpos < :pos))`;
}

function dynamoWrites(writes: readonly AtomicWrite[] | undefined): DynamoDBAtomicWrite[] {
  return (writes ?? []).map((w) => {
    if (!isDynamoDBAtomicWrite(w))
      throw new UnsupportedAtomicWriteError(`DynamoDBStore cannot fold a ${w.engine} write`);
    return w;
  });
}

/** Only the names an expression uses may be sent (DynamoDB rejects unused ones). */
function pick(names: Record<string, string>, expressions: string): Record<string, string> {
  const used = new Set(expressions.match(/#\w+/g));
  return Object.fromEntries(Object.entries(names).filter(([k]) => used.has(k)));
}

function withOldItemOnFailure(item: TransactWriteItem): TransactWriteItem {
  if (item.Put) return { Put: { ...item.Put, ReturnValuesOnConditionCheckFailure: "ALL_OLD" } };
  if (item.Update) return { Update: { ...item.Update, ReturnValuesOnConditionCheckFailure: "ALL_OLD" } };
  return item;
}

function wrap(op: string, key: string, error: unknown): StoreError {
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return new StoreError(`DynamoDB ${op} of ${key} failed: ${message}`, { cause: error });
}

export function toRecord(item: Item, identity?: string): StateRecord {
  const str = (name: string) => item[name]?.S;
  const num = (name: string) => (item[name]?.N !== undefined ? Number(item[name]?.N) : undefined);
  const eid = str("eid") ?? "";
  const attempts = num(attemptAttribute(identity ?? eid)) ?? 0;
  const record: StateRecord = {
    key: str(STATE_KEY_ATTRIBUTE) ?? "",
    status: (str("status") ?? "released") as StateStatus,
    position: str("pos") ?? "",
    identity: eid,
    fence: num("fence") ?? 0,
    attempts,
  };
  const lease = num("leaseUntil");
  if (lease !== undefined) record.leaseUntilMs = lease;
  const cpos = str("cpos");
  if (cpos !== undefined) record.committedPosition = cpos;
  const ceid = str("ceid");
  if (ceid !== undefined) record.committedIdentity = ceid;
  const result = str("result");
  if (result !== undefined) record.result = result;
  const exp = num(TTL_ATTRIBUTE);
  if (exp !== undefined) record.expiresAtSeconds = exp;
  return record;
}
