import type { Redis } from "ioredis";
import type { StateRecord } from "../../core/state.js";
import {
  type ForgetOptions,
  type ForgetResult,
  forgetLeaseBoundMs,
  listFrom,
  type StateQuery,
  StoreAdmin,
} from "../../core/state-admin.js";
import { primaries } from "./client.js";
import { valkeyStoreError } from "./errors.js";
import { stateKeyOfRedisKey, stateKeyPattern } from "./keys.js";
import type { ValkeyStoreOptions } from "./options.js";
import { hashOfFlat, hashOfValues, LISTED_FIELDS, recordOf } from "./record.js";
import { internalsOf, ValkeyStore } from "./store.js";

/** Keys a SCAN step asks for: a hint to the server, which may return more or fewer. */
const SCAN_COUNT = 1000;

/**
 * The operator's view of a Valkey store (src/core/state-admin.ts). `list` SCANs the state hashes of the key prefix
 * (every primary of a cluster) and reads each without its result, then filters, orders and limits: a scan of the
 * prefix, as DynamoDB's; an operator's query needs no index. `forget` is one script (lua.ts FORGET): deletes the
 * hash unless a live lease holds it, and returns it either way. `close` ends the client it was given.
 */
export class ValkeyStateAdmin extends StoreAdmin<ValkeyStore> {
  constructor(options: ValkeyStoreOptions) {
    super(new ValkeyStore(options));
  }

  async list(query: StateQuery): Promise<StateRecord[]> {
    const { client, keyPrefix } = internalsOf(this.store);
    const found: StateRecord[] = [];
    try {
      for (const node of primaries(client)) {
        let cursor = "0";
        do {
          const [next, keys] = await node.scan(
            cursor,
            "MATCH",
            stateKeyPattern(keyPrefix),
            "COUNT",
            SCAN_COUNT,
          );
          cursor = next;
          found.push(...(await this.#records(node, keyPrefix, keys)));
        } while (cursor !== "0");
      }
    } catch (error) {
      throw valkeyStoreError("list", keyPrefix, error, client);
    }
    return listFrom(found, query);
  }

  /** The listed fields of `keys`, one pipeline; keys gone since the scan are left out. */
  async #records(node: Redis, prefix: string, keys: readonly string[]): Promise<StateRecord[]> {
    // The pattern also matches a step marker whose step name ends in `}`: only state hashes are read.
    const states = keys.flatMap((k) => {
      const stateKey = stateKeyOfRedisKey(prefix, k);
      return stateKey === undefined ? [] : [{ k, stateKey }];
    });
    if (states.length === 0) return [];
    const batch = node.pipeline();
    for (const { k } of states) batch.hmget(k, ...LISTED_FIELDS);
    const replies = (await batch.exec()) ?? [];
    const out: StateRecord[] = [];
    states.forEach(({ stateKey }, i) => {
      const [error, values] = replies[i] ?? [];
      if (error) throw error;
      const record = recordOf(stateKey, hashOfValues(LISTED_FIELDS, values as (string | null)[]));
      if (record) out.push(record);
    });
    return out;
  }

  async forget(key: string, options: ForgetOptions): Promise<ForgetResult> {
    const boundMs = forgetLeaseBoundMs(options); // checked before the script: a bad option is no store error
    const { runner } = internalsOf(this.store);
    const reply = await runner.run("forget", "forget", key, [this.store.redisKeyOf(key)], [String(boundMs)]);
    const [landed, flat] = reply as [number, unknown[]];
    const state = recordOf(key, hashOfFlat(flat));
    if (!state) return { forgotten: false };
    return landed === 1 ? { forgotten: true, state } : { forgotten: false, state };
  }

  async close(): Promise<void> {
    await internalsOf(this.store).client.quit();
  }
}
