import {
  ConditionalCheckFailedException,
  type DynamoDBClient,
  TransactionCanceledException,
  type TransactWriteItem,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import { EffectRefusedError, type StoreError } from "../../core/errors.js";
import type { WriteOutcome } from "../../core/store.js";
import type { DynamoDBAtomicWrite } from "./atomic-write.js";
import type { Item } from "./expressions.js";

/** What a folded write needs to be sent: its item, its description, what its condition failing means. */
export type FoldedWrite = Pick<DynamoDBAtomicWrite, "item" | "description" | "refused">;

/** How a folded transaction ended: landed (each write's outcome), or refused by a head item's condition. */
export type FoldedAnswer =
  | { ok: true; writes: WriteOutcome[] }
  /** The head items whose own condition failed (their index in `head`), with the item each was refused on. */
  | { ok: false; refused: { index: number; item: Item | undefined }[] };

/**
 * Sends `head` (the library's own items: a state update, a step's fence and marker) and `writes` (the effects folded
 * in) as one TransactWriteItems; a lone head update without writes as one UpdateItem (half the write units). A write
 * refused by its own (fencing) condition means its target already holds newer work: it is dropped, reported as its
 * `refused` setting says (`abort` throws `EffectRefusedError`), and the rest sent again. A refused head item ends it.
 * Other failures (a conflict, throttling, validation) throw `storeError(error)`.
 */
export async function sendFolded(
  client: DynamoDBClient,
  head: readonly TransactWriteItem[],
  writes: readonly FoldedWrite[],
  storeError: (error: unknown) => StoreError,
): Promise<FoldedAnswer> {
  let pending = writes;
  const dropped: WriteOutcome[] = [];
  const items = head.map(withOldItemOnFailure);
  for (;;) {
    try {
      const lone = pending.length === 0 && items.length === 1 ? items[0]?.Update : undefined;
      if (lone) await client.send(new UpdateItemCommand(lone));
      else
        await client.send(
          new TransactWriteItemsCommand({
            TransactItems: [...items, ...pending.map((w) => withOldItemOnFailure(w.item))],
          }),
        );
      const applied = pending.map((w) => ({ description: w.description, status: "applied" as const }));
      return { ok: true, writes: [...applied, ...dropped] };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        return { ok: false, refused: [{ index: 0, item: error.Item }] };
      }
      if (!(error instanceof TransactionCanceledException)) throw storeError(error);
      const reasons = error.CancellationReasons ?? [];
      const failed = (i: number) => reasons[i]?.Code === "ConditionalCheckFailed";
      const refusedHead = head.flatMap((_, i) => (failed(i) ? [{ index: i, item: reasons[i]?.Item }] : []));
      if (refusedHead.length > 0) return { ok: false, refused: refusedHead };
      const refused = pending.filter((_, i) => failed(i + head.length));
      if (refused.length === 0) throw storeError(error);
      const abort = refused.find((w) => w.refused === "abort");
      if (abort) throw new EffectRefusedError(abort.description);
      for (const w of refused)
        dropped.push({ description: w.description, status: w.refused === "refused" ? "refused" : "stale" });
      pending = pending.filter((w) => !refused.includes(w));
    }
  }
}

/** The item it was refused on comes back with a refusal (no read after). */
function withOldItemOnFailure(item: TransactWriteItem): TransactWriteItem {
  if (item.Put) return { Put: { ...item.Put, ReturnValuesOnConditionCheckFailure: "ALL_OLD" } };
  if (item.Update) return { Update: { ...item.Update, ReturnValuesOnConditionCheckFailure: "ALL_OLD" } };
  return item;
}
