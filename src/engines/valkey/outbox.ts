import type { Redis } from "ioredis";
import { custom, integer, required, resolveOptions, schemaFor } from "../../core/options.js";
import { outboxWriteDescription } from "../../outbox/message-id.js";
import type * as Outbox from "../../outbox/types.js";
import { clientId, type ValkeyAtomicWrite } from "./atomic-write.js";
import { optionalClientField, primaries, type ValkeyClient } from "./client.js";
import { valkeyStoreError } from "./errors.js";
import {
  escapeTag,
  outboxHintRedisKey,
  outboxKeyPattern,
  outboxLeaseRedisKey,
  outboxRedisKey,
  outboxTagOf,
} from "./keys.js";
import { ScriptRunner } from "./runner.js";
import { internalsOf, ValkeyStore } from "./store.js";

/** The options of `ValkeyOutbox`. */
export interface ValkeyOutboxOptions {
  /** The store whose commits fold the entries: its client and key prefix are the outbox's. */
  store: ValkeyStore;
  /**
   * The connection the relay side (claim, markSent, pending, the sweep) uses: the same server or cluster as the
   * store's, e.g. a relay's own. Default the store's client.
   */
  readerClient?: ValkeyClient;
  /**
   * How often (ms, by the relay's clock) `claim` sweeps the key space for outbox entries whose commit's hint was lost
   * (SCAN on every primary); the first `claim` of each `ValkeyOutbox` sweeps too. Default 60 000.
   */
  sweepIntervalMs?: number;
  /** How many tags' claim scripts run at once. Default 16. */
  claimConcurrency?: number;
}

const OUTBOX_OPTIONS = schemaFor<ValkeyOutboxOptions>()({
  store: required(custom<ValkeyStore>("a ValkeyStore", (v) => v instanceof ValkeyStore)),
  readerClient: optionalClientField,
  sweepIntervalMs: integer({ min: 1, default: 60_000 }),
  claimConcurrency: integer({ min: 1, max: 1000, default: 16 }),
});

/** Where a claimed entry lives (its tag): not a field of the entry, so a claimed entry still equals the committed one. */
const TAG = Symbol("valkey outbox tag");
type Tagged = Outbox.ClaimedEntry & { [TAG]?: string };

/**
 * The Valkey / Redis outbox (docs/valkey.md, "Outbox"). An entry is written by the commit that publishes it, in the
 * commit's script, so it must be in the state key's slot: a member of the sorted set `<prefix>{<tag>}o` of the
 * commit's state key's tag, written as a plain ZADD (score 0, so members sort by their text, which starts with the
 * entry's order), checked and applied by the script's one set of write rules (lua.ts `plan_writes`).
 *
 * Relays find the tags with entries two ways: the store adds a committed entry's tag to the hint set
 * `<prefix>{%}outbox` after the commit (another slot, so not atomically), and a sweep SCANs every primary for
 * `<prefix>{*}o` at a relay's first claim and every `sweepIntervalMs`, so an entry whose hint was lost is found by
 * the next sweep. A tag is dropped from the hints only when its set is empty, and re-added when an entry arrived
 * meanwhile (remove, then check again: a commit's hint that came between is then kept).
 *
 * A claim runs one script per tag (lua.ts OUTBOX_CLAIM): each subject's oldest entry of the tag, when not leased by
 * a live lease, leased for the relay (`<prefix>{<tag>}ol`). `markSent` removes the entry when the relay's lease is
 * still on it; no sent marker is kept (an entry that is gone was sent). Safe in several copies, on one server or a
 * cluster. A subject's order holds among the entries of one state key: an ordered event's (one state key per
 * subject); unordered events of a subject (one state key per event) have no commit order among them.
 */
export class ValkeyOutbox implements Outbox.Outbox, Outbox.OutboxReader {
  readonly engine = "valkey";
  readonly #client: ValkeyClient;
  readonly #store: ValkeyClient;
  readonly #prefix: string;
  readonly #runner: ScriptRunner;
  readonly #sweepMs: number;
  readonly #concurrency: number;
  #nextSweepMs = Number.NEGATIVE_INFINITY;

  constructor(options: ValkeyOutboxOptions) {
    const o = resolveOptions("ValkeyOutbox", OUTBOX_OPTIONS, options);
    const { client, keyPrefix } = internalsOf(o.store);
    this.#store = client;
    this.#client = o.readerClient ?? client;
    this.#prefix = keyPrefix;
    this.#runner = new ScriptRunner(this.#client, undefined);
    this.#sweepMs = o.sweepIntervalMs;
    this.#concurrency = o.claimConcurrency;
  }

  entryWrite(entry: Outbox.OutboxEntry, stateKey: string): ValkeyAtomicWrite {
    const tag = escapeTag(stateKey);
    const json = JSON.stringify({
      messageId: entry.messageId,
      subject: entry.subject,
      order: entry.order,
      destination: entry.destination,
      body: entry.body,
      groupId: entry.groupId,
      ...(entry.attributes !== undefined ? { attributes: entry.attributes } : {}),
      createdAtMs: entry.createdAtMs,
    });
    return {
      engine: "valkey",
      description: outboxWriteDescription(entry.messageId),
      client: clientId(this.#store),
      op: "zadd",
      key: outboxRedisKey(this.#prefix, tag),
      tag,
      args: ["0", `${entry.order}\n${entry.messageId}\n${json}`],
    };
  }

  async claim(req: Outbox.ClaimEntriesRequest): Promise<Outbox.ClaimedEntry[]> {
    const hintKey = outboxHintRedisKey(this.#prefix);
    const tags = new Set<string>();
    if (req.nowMs >= this.#nextSweepMs) {
      for (const tag of await this.#sweep()) tags.add(tag);
      if (tags.size > 0) await this.#call("outbox hints", () => this.#client.sadd(hintKey, ...tags));
      this.#nextSweepMs = req.nowMs + this.#sweepMs;
    }
    for (const tag of await this.#call("outbox hints", () => this.#client.smembers(hintKey))) tags.add(tag);
    // Relays start at different tags, so that they do not all queue on the same scripts.
    const order = shuffle([...tags]);
    const out: Outbox.ClaimedEntry[] = [];
    while (order.length > 0 && out.length < req.limit) {
      const remaining = req.limit - out.length;
      const batch = order.splice(0, Math.min(remaining, this.#concurrency));
      // Never more than `remaining` in all: an entry claimed and not sent would wait for its lease to run out.
      const each = Math.floor(remaining / batch.length);
      const claimed = await Promise.all(batch.map((tag) => this.#claimTag(tag, each, req)));
      for (const entries of claimed) out.push(...entries);
    }
    return out;
  }

  async markSent(entry: Outbox.ClaimedEntry, _sentAtMs: number): Promise<boolean> {
    const tag = (entry as Tagged)[TAG];
    if (tag === undefined) return false; // not an entry this engine's claim gave: it holds no lease of ours
    const keys = [outboxRedisKey(this.#prefix, tag), outboxLeaseRedisKey(this.#prefix, tag)];
    const args = [entry.order, entry.messageId, entry.owner, String(entry.leaseUntilMs)];
    return (await this.#runner.run("outboxMarkSent", "outbox markSent", entry.messageId, keys, args)) === 1;
  }

  /** Every unsent entry: a SCAN of every primary (operators and tests; a relay claims instead). */
  async pending(): Promise<Outbox.OutboxEntry[]> {
    const out: Outbox.OutboxEntry[] = [];
    for (const tag of await this.#sweep()) {
      const key = outboxRedisKey(this.#prefix, tag);
      const members = await this.#call(key, () => this.#client.zrange(key, "0", "-1"));
      for (const m of members) out.push(parseMember(m).entry);
    }
    return out;
  }

  async #claimTag(
    tag: string,
    limit: number,
    req: Outbox.ClaimEntriesRequest,
  ): Promise<Outbox.ClaimedEntry[]> {
    const key = outboxRedisKey(this.#prefix, tag);
    const keys = [key, outboxLeaseRedisKey(this.#prefix, tag)];
    const args = [String(limit), req.owner, String(req.leaseUntilMs), String(req.nowMs)];
    const [members, held] = (await this.#runner.run("outboxClaim", "outbox claim", key, keys, args)) as [
      string[],
      number,
    ];
    if (held === 0) await this.#dropHint(tag);
    return members.map((m) => {
      const claimed: Tagged = { ...parseMember(m).entry, owner: req.owner, leaseUntilMs: req.leaseUntilMs };
      Object.defineProperty(claimed, TAG, { value: tag, enumerable: false });
      return claimed;
    });
  }

  /**
   * Drops an empty tag from the hints, then looks again: a commit that added an entry since also added its hint,
   * which the removal may have taken; the second look sees that entry and puts the hint back.
   */
  async #dropHint(tag: string): Promise<void> {
    const hintKey = outboxHintRedisKey(this.#prefix);
    await this.#call("outbox hints", () => this.#client.srem(hintKey, tag));
    const held = await this.#call(tag, () => this.#client.zcard(outboxRedisKey(this.#prefix, tag)));
    if (held > 0) await this.#call("outbox hints", () => this.#client.sadd(hintKey, tag));
  }

  /** The tags of every outbox sorted set, by SCAN on every primary. */
  async #sweep(): Promise<Set<string>> {
    const tags = new Set<string>();
    for (const node of primaries(this.#client)) {
      let cursor = "0";
      do {
        const [next, keys] = await this.#call("outbox sweep", () =>
          (node as Redis).scan(cursor, "MATCH", outboxKeyPattern(this.#prefix), "COUNT", 1000),
        );
        cursor = next;
        for (const key of keys) {
          const tag = outboxTagOf(this.#prefix, key);
          if (tag !== undefined) tags.add(tag);
        }
      } while (cursor !== "0");
    }
    return tags;
  }

  async #call<T>(what: string, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (error) {
      throw valkeyStoreError("outbox", what, error, this.#client);
    }
  }
}

/** A sorted-set member of lua.ts OUTBOX_CLAIM: `<order>\n<message id>\n<entry JSON>`. */
function parseMember(member: string): { entry: Outbox.OutboxEntry } {
  const json = member.slice(member.indexOf("\n", member.indexOf("\n") + 1) + 1);
  return { entry: JSON.parse(json) as Outbox.OutboxEntry };
}

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j] as T, items[i] as T];
  }
  return items;
}
