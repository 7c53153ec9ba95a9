import { positionFromNumber } from "../core/position.js";
import { stateKey } from "../core/state-key.js";
import type { Chooser } from "./chooser.js";
import type { HistoryObserver } from "./observer.js";
import type { SimDelivery } from "./sim-delivery.js";
import type { SimEvent } from "./sim-event.js";

/**
 * Hostile keys (the key rule, src/core/key-text.ts): names that UTF-8 cannot carry — lone surrogates, and NUL,
 * which PostgreSQL refuses — beside the well-formed name a lossy encoding would give them (U+FFFD, NUL dropped).
 * `order\uD800`, `order\uDC00` and `order\uFFFD` are three events: the first two must be refused as malformed
 * (never applied, every delivery `malformed`), the
 * third must run once, as any event. A malformed delivery is acknowledged and counted (the wrappers' route for a
 * direct invoke). A mapping that merges them shows as a malformed event applied or an event answered `duplicate`
 * that never ran.
 */
export const LONE_SURROGATES = ["\uD800", "\uDBFF", "\uDC00", "\uDFFF"] as const;

/** What a lossy encoding does to a key: each lone surrogate becomes U+FFFD (UTF-8 in every driver), NUL is dropped. */
export function lossyKey(s: string): string {
  return Buffer.from(s, "utf8").toString("utf8").replaceAll("\0", "");
}

/** Whether a generated name is one the key rule refuses: it carries a lone surrogate or NUL. */
function hostile(s: string): boolean {
  return lossyKey(s) !== s;
}

/** A hostile twin of `base`: a lone surrogate or NUL at its end or inside it. */
function twin(base: string, c: Chooser): string {
  const bad = c.int(0, 4) === 4 ? "\0" : (LONE_SURROGATES[c.int(0, 3)] as string);
  return c.int(0, 1) === 0 ? `${base}${bad}` : `${base.slice(0, 1)}${bad}${base.slice(1)}`;
}

/** `--break` modes that undo the key rule, for the tests that show the simulator catches it. */
export const BROKEN_KEYS: Record<string, { what: string }> = {
  "lossy-keys": {
    what: "keys reach the guard lossily encoded (a lone surrogate as U+FFFD, NUL dropped), as UTF-8 did before the key rule: different events share a state item",
  },
};

/** The step names a durable history may draw: plain ones and their hostile twins (the marker key takes them). */
export function hostileStepNames(c: Chooser): string[] {
  return ["charge", twin("charge", c), twin("charge", c), "charge\uFFFD"];
}

/**
 * The hostile events of a history, after its `first` events (indices go on from there): in some histories (drawn;
 * none in exhaustive runs, where `int` gives its minimum) an ordered subject, or a dedupe event's identity, spelled
 * in three ways — two hostile twins and their lossy look-alike. `lossy` (`--break lossy-keys`) hands the guard the
 * lossy spelling of every name instead, as a mapping that is not one-to-one would: the simulator must catch it.
 */
export function hostileKeyEvents(
  o: { ns: string; first: number; eventsPerSubject: number; lossy: boolean },
  c: Chooser,
): SimEvent[] {
  const kind = c.int(0, 3);
  if (kind === 0) return [];
  const base = `${o.ns}k`;
  const spellings = [twin(base, c), twin(base, c), `${base}\uFFFD`];
  if (spellings[0] === spellings[1]) spellings.splice(1, 1);
  const events: SimEvent[] = [];
  const add = (subject: string, identity: string, position: string | undefined) => {
    const malformed = hostile(subject) || hostile(identity);
    const [s, i] = o.lossy ? [lossyKey(subject), lossyKey(identity)] : [subject, identity];
    events.push({
      index: o.first + events.length,
      subject: s,
      identity: i,
      position,
      // What an engine keys a malformed one on is the lossy spelling (where its effects would land, if applied).
      key: stateKey(lossyKey(s), lossyKey(i), position !== undefined),
      counterId: `${o.ns}c${o.first + events.length}`,
      acknowledged: false,
      ...(malformed ? { malformed: true as const } : {}),
    });
  };
  if (kind === 1)
    for (const s of spellings)
      for (let p = 1; p <= o.eventsPerSubject; p++) add(s, `v${p}`, positionFromNumber(p));
  else for (const s of spellings) add(kind === 2 ? `${base}d` : s, kind === 2 ? s : "i", undefined);
  return events;
}

/**
 * I5 for hostile keys: a malformed event is never applied and every delivery of it ends `malformed`; no other
 * event is ever called malformed.
 */
export function checkHostileKeys(
  f: { observer: HistoryObserver; events: SimEvent[]; deliveries: SimDelivery[] },
  counts: ReadonlyMap<number, number>,
): void {
  for (const e of f.events) {
    const name = `${JSON.stringify(e.subject)}/${JSON.stringify(e.identity)}`;
    if (e.malformed && (counts.get(e.index) ?? 0) > 0)
      f.observer.violate("I5", false, `${name} breaks the key rule but was applied`);
    for (const d of f.deliveries.filter((x) => x.event === e.index))
      if ((d.status === "malformed") !== (e.malformed === true))
        f.observer.violate(
          "I5",
          false,
          `w${d.worker} call ${d.call}: ${name} ${e.malformed ? "breaks the key rule but was" : "was refused as"} ${d.status}`,
        );
  }
}
