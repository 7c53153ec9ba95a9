import type { StateRecord } from "../../core/state.js";
import type { StateAdmin } from "../../core/state-admin.js";
import { engine } from "../../engines/registry.js";
import { dynamoDBClient } from "../../local/emulators/dynamodb-local.js";
import { oneLine } from "../errors.js";
import { openAdmin } from "../state/connect.js";
import { listsByRow, type ResolvedConnection } from "../state/options.js";
import { RUN_STATE_FLAG_NAMES } from "./options.js";

/**
 * The guard's state after a run, as I2 and I3 read it (invariants.ts): every record of the store, through the
 * engine's StateAdmin, or why it could not be read.
 */
export type RunState = ReadState | { where: string; error: string };

export interface ReadState {
  /** The store kind and table (or file), for the report. */
  where: string;
  records: StateRecord[];
  /** Records are named by their inline row, not their state key (a custom --row-key without its inverse). */
  byRow: boolean;
  /** When the run started (epoch ms): a record last claimed before it is not this run's. */
  sinceMs: number;
}

/** More records than any local run makes; a listing that reaches it says so. */
export const RUN_STATE_LIMIT = 1_000_000;

/** The kind and table (or file) the state is in, for the report. */
export async function stateWhere(c: ResolvedConnection): Promise<string> {
  return engine(c.store, c).where(c);
}

/**
 * Creates what the handler expects to find where the run owns the engine's server (its DynamoDB Local: the state
 * table, or the inline state's table with its hash key): the engine's `prepareRunState`. Engines without one leave
 * it to the handler, which creates its tables as on a cold start.
 */
export async function prepareState(
  c: ResolvedConnection | undefined,
  dynamodbEndpoint: string,
): Promise<void> {
  if (!c) return;
  await engine(c.store, c).prepareRunState?.(c, dynamodbEndpoint);
}

/** Lists every record of the state through its admin (DynamoDB: the run's own, with the runtime's key pair). */
export async function readRunState(
  c: ResolvedConnection,
  dynamodbEndpoint: string,
  sinceMs: number,
): Promise<RunState> {
  const where = await stateWhere(c);
  // The run's own DynamoDB Local, with the runtime's key pair (the connection flags name no endpoint).
  const dynamodb = engine(c.store, c).connection.includes("endpoint")
    ? dynamoDBClient(dynamodbEndpoint)
    : undefined;
  let admin: StateAdmin | undefined;
  try {
    admin = await openAdmin(c, { ...(dynamodb ? { dynamodb } : {}), flags: RUN_STATE_FLAG_NAMES });
    const records = await admin.list({ limit: RUN_STATE_LIMIT, nowMs: Date.now() });
    return { where, records, byRow: listsByRow(c), sinceMs };
  } catch (error) {
    return { where, error: oneLine(error) };
  } finally {
    // The admin owns the client; one that never opened leaves it to us.
    if (admin) await admin.close().catch(() => {});
    else dynamodb?.destroy();
  }
}
