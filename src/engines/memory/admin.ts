import type { StateRecord } from "../../core/state.js";
import {
  compareForAdmin,
  type ForgetOptions,
  type ForgetResult,
  fenceAt,
  forgetRefused,
  resolveForgetOptions,
  type StateAdmin,
  type StateQuery,
} from "../../core/state-admin.js";
import type { MemoryStore } from "./store.js";

/**
 * The operator's view of a MemoryStore (src/core/state-admin.ts), as each engine has one: `list` filters and sorts
 * the records, `forget` deletes one unless forgetRefused, in one synchronous step (so no claim lands in between).
 */
export class MemoryStateAdmin implements StateAdmin {
  readonly engine = "memory";
  readonly store: MemoryStore;

  constructor(store: MemoryStore) {
    this.store = store;
  }

  async list(query: StateQuery): Promise<StateRecord[]> {
    const before = query.claimedBeforeMs === undefined ? undefined : fenceAt(query.claimedBeforeMs);
    return this.store
      .records()
      .filter(
        (r) =>
          (query.status === undefined || r.status === query.status) &&
          (before === undefined || r.fence < before),
      )
      .map(({ result: _result, ...listed }) => listed)
      .sort((a, b) => compareForAdmin(a, b, query.nowMs))
      .slice(0, query.limit);
  }

  async forget(key: string, options: ForgetOptions): Promise<ForgetResult> {
    const o = resolveForgetOptions(options);
    const state = this.store.records().find((r) => r.key === key);
    if (!state) return { forgotten: false };
    if (forgetRefused(state, o)) return { forgotten: false, state };
    this.store.forget(key);
    return { forgotten: true, state };
  }

  async close(): Promise<void> {}
}
