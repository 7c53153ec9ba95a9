import type { StateRecord } from "../../core/state.js";
import {
  type ForgetOptions,
  type ForgetResult,
  forgetRefused,
  listFrom,
  resolveForgetOptions,
  type StateQuery,
  StoreAdmin,
} from "../../core/state-admin.js";
import type { MemoryStore } from "./store.js";

/**
 * The operator's view of a MemoryStore (src/core/state-admin.ts), as each engine has one: `list` filters and sorts
 * the records, `forget` deletes one unless forgetRefused, in one synchronous step (so no claim lands in between).
 */
export class MemoryStateAdmin extends StoreAdmin<MemoryStore> {
  async list(query: StateQuery): Promise<StateRecord[]> {
    return listFrom(this.store.records(), query).map(({ result: _result, ...listed }) => listed);
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
