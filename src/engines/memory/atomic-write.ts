import type * as Store from "../../core/store.js";

/**
 * An effect the memory store makes inside its commit: `land` returns false when its fencing refuses it. (`apply`, its
 * old name, is still accepted: the guard's `apply` is another thing.)
 */
export type MemoryAtomicWrite = Store.AtomicWrite & { readonly engine: "memory" } & (
    | {
        /** Makes the write; false when its own condition refused it (reported `stale`). */
        land(): boolean;
      }
    | {
        /** @deprecated Renamed `land`; removed in the next minor version. */
        apply(): boolean;
      }
  );

/** Makes a memory write (`land`, or the deprecated `apply`): whether it landed, false when its condition refused it. */
export function landMemoryWrite(write: MemoryAtomicWrite): boolean {
  return "land" in write ? write.land() : write.apply();
}

/** Whether `write` is a memory write: `land` (or the deprecated `apply`) a function. */
export function isMemoryWrite(write: { engine: string }): write is MemoryAtomicWrite {
  const w = write as { land?: unknown; apply?: unknown };
  return write.engine === "memory" && (typeof w.land === "function" || typeof w.apply === "function");
}
