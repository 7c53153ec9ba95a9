import type { TransactWriteItem } from "@aws-sdk/client-dynamodb";
import type { AtomicWrite } from "../../core/store.js";

/** A DynamoDB write (Put/Update/Delete/ConditionCheck with its condition) the DynamoDB store folds into its commit. */
export interface DynamoDBAtomicWrite extends AtomicWrite {
  readonly engine: "dynamodb";
  readonly item: TransactWriteItem;
  /**
   * What its own condition failing means: `stale` (default: a fenced write whose target holds newer work),
   * `refused` (a user condition: reported, the commit lands without it) or `abort` (the commit is cancelled).
   */
  readonly refused?: "stale" | "refused" | "abort";
}

/** Whether `write` is a DynamoDB write the DynamoDB store can fold into its commit. */
export function isDynamoDBAtomicWrite(write: AtomicWrite): write is DynamoDBAtomicWrite {
  return write.engine === "dynamodb" && typeof (write as DynamoDBAtomicWrite).item === "object";
}
