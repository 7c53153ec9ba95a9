import type { GuardOutcome } from "../core/guard.js";
import type { Mode } from "./history-config.js";

/** One delivery of a history (one guard call by a worker) and how it ended: the final checks read them. */
export interface SimDelivery {
  event: number;
  worker: number;
  call: number;
  mode: Mode;
  /** `malformed`: the guard refused the event's keys (a `MalformedEventError`), the wrappers' malformed route. */
  status: GuardOutcome<unknown>["status"] | "threw" | "malformed";
  acknowledged: boolean;
  /** Processed, but every folded write was stale: newer work holds its targets (inline state's one row). */
  superseded?: true;
}
