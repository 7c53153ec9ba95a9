import type { AtomicWrite } from "../core/store.js";
import type { ForeignKind } from "./backend.js";
import type { RunningHistory } from "./running-history.js";
import type { SimEvent } from "./sim-event.js";

/**
 * Foreign values in effect targets: before some histories, on engines whose backend has `foreign` targets, someone
 * else has written one event's target (a counter written as `"007"`, a key of another type, an integer at int64's
 * edge), and each commit of that event folds writes to it after its counter. A value the engine refuses must take
 * the refusal route: every commit of the event refused whole (its counter never moves, the target keeps what was
 * planted), the event never acknowledged; it dead-letters, by design. A value it takes must give exact effects: the
 * target moves by one commit's writes per commit that landed. A commit that lands half (the counter moved, the
 * foreign write failed) is applied again by every redelivery: I1 sees it.
 */

/** Share of the histories (on such engines) with a foreign value. */
const PLANT_SHARE = 0.3;

/**
 * Plants a foreign value before the history runs, drawn from its chooser. A value the engine refuses goes only in
 * the target of an event without a position (an ordered one's sink put, written before the commit and outside it,
 * would hold a position that never commits), and only in a history whose source does not duplicate messages: each
 * copy of a message refused for good is received up to `maxReceives` times, and duplicated again meanwhile.
 */
export async function plantForeign(run: RunningHistory): Promise<void> {
  const foreign = run.backend.foreign;
  if (!foreign || !run.chooser.chance(PLANT_SHARE)) return;
  const kind = foreign.kinds[run.chooser.choose(foreign.kinds.length, "foreign kind")] as ForeignKind;
  const refusable = run.cfg.faults.duplicateRate === 0;
  const events = run.events.filter((e) => !kind.refused || (refusable && e.position === undefined));
  if (events.length === 0) return;
  const e = events[run.chooser.choose(events.length, "foreign event")] as SimEvent;
  await foreign.plant(e, kind.name);
  run.foreign = { event: e.index, kind };
  run.faults.count("foreign-value");
  run.observer.log(() => `${kind.name} planted in the foreign target of ${e.subject}/${e.identity}`);
}

/** The writes a commit of `e` folds to its foreign target (none when it has none). */
export function foreignWrites(run: RunningHistory, e: SimEvent): AtomicWrite[] {
  const plan = run.foreign;
  if (!plan || plan.event !== e.index || !run.backend.foreign) return [];
  return run.backend.foreign.writes(e, plan.kind.name);
}

/** The events whose commits the engine refuses: the checks of I1 and I4 leave them to `checkForeign`. */
export function refusedEvents(run: RunningHistory): ReadonlySet<number> {
  return new Set(run.foreign?.kind.refused ? [run.foreign.event] : []);
}

/** The refusal route, or exact effects (above). */
export async function checkForeign(run: RunningHistory): Promise<void> {
  const plan = run.foreign;
  const foreign = run.backend.foreign;
  if (!plan || !foreign) return;
  const e = run.events[plan.event] as SimEvent;
  const { count } = await run.backend.readCounter(e);
  const what = `${e.subject}/${e.identity} (${plan.kind.name} in its foreign target)`;
  if (plan.kind.refused && count > 0)
    run.observer.violate("I1", true, `${what}: its commits are refused, yet ${count} landed half`);
  const wrong = await foreign.check(e, plan.kind.name, plan.kind.refused ? 0 : count);
  if (wrong) run.observer.violate("I1", true, `${what}: ${wrong}`);
}
