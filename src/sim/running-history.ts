import type { Publish } from "../outbox/publish.js";
import type { Outbox } from "../outbox/types.js";
import type { Backend, ForeignKind } from "./backend.js";
import type { Chooser } from "./chooser.js";
import type { ColdStarts } from "./cold-start.js";
import type { HistoryFaultInjector } from "./faults.js";
import type { HistoryConfig } from "./history-config.js";
import type { KnownIssue } from "./known-issues.js";
import type { HistoryObserver } from "./observer.js";
import type { SimDelivery } from "./sim-delivery.js";
import type { SimEvent } from "./sim-event.js";
import type { Source } from "./source.js";
import type { VirtualScheduler } from "./virtual-time.js";

/** What one running history's phases share: its scheduler, checks, stores, events, queue and what happened. */
export interface RunningHistory {
  readonly cfg: HistoryConfig;
  readonly chooser: Chooser;
  readonly sim: VirtualScheduler;
  readonly observer: HistoryObserver;
  readonly faults: HistoryFaultInjector;
  readonly backend: Backend;
  readonly events: SimEvent[];
  /** State keys and the subjects with a sink row (ordered events), sampled and checked at the end. */
  readonly keys: string[];
  readonly sinkSubjects: string[];
  readonly source: Source;
  readonly deliveries: SimDelivery[];
  readonly knownIssues: Set<KnownIssue>;
  /** SQL servers: cold starts (migrations) beside live traffic, at a chosen step (cold-start.ts). */
  readonly coldStarts: ColdStarts | undefined;
  /** Guard calls so far (numbering them), whether a delivery ended since the last sample, workers done. */
  calls: number;
  sampleDue: boolean;
  workersDone: number;
  /** A value someone else wrote in one event's effect target before the history (foreign-values.ts). */
  foreign?: { event: number; kind: ForeignKind };
  /** Outbox histories (outbox-history.ts): the guards' `outbox`, and what each handler run publishes. */
  outbox?: Outbox;
  publish?: (e: SimEvent, ctx: { fence: number; publish: Publish }) => void;
}
