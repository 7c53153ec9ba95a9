/**
 * Runs lanes of work with a concurrency limit: items of one lane strictly one after another, lanes in
 * parallel. SQS FIFO batches use one lane per MessageGroupId (and stop a lane at its first failure, so a
 * group's later messages never overtake a failed one); other batches use one lane per subject, so two
 * events of one object in one batch do not make each other wait as "busy".
 */
export interface Lane<T> {
  items: T[];
  /** After an item fails, the rest of the lane is not run but handed to `skip`. */
  stopOnFailure: boolean;
}

/** Not async itself: the workers' Promise.all is what the caller awaits (one frame less on every event's path). */
export function runLanes<T>(
  lanes: readonly Lane<T>[],
  concurrency: number,
  run: (item: T) => Promise<boolean>,
  skip: (item: T) => void,
): Promise<unknown> {
  let next = 0;
  const worker = async () => {
    while (next < lanes.length) {
      const lane = lanes[next++] as Lane<T>;
      let failed = false;
      for (const item of lane.items) {
        if (failed) {
          skip(item);
          continue;
        }
        const ok = await run(item);
        if (!ok && lane.stopOnFailure) failed = true;
      }
    }
  };
  return Promise.all(Array.from({ length: Math.min(concurrency, lanes.length) }, worker));
}

/** Groups items into lanes by key, keeping first-seen order within and across lanes. */
export function groupLanes<T>(
  items: readonly T[],
  keyOf: (item: T) => string,
  stopOnFailure: boolean,
): Lane<T>[] {
  const lanes = new Map<string, Lane<T>>();
  for (const item of items) {
    const key = keyOf(item);
    let lane = lanes.get(key);
    if (!lane) {
      lane = { items: [], stopOnFailure };
      lanes.set(key, lane);
    }
    lane.items.push(item);
  }
  return [...lanes.values()];
}
