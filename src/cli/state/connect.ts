import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { InlineRowMapping, StateAdmin } from "../../core/state-admin.js";
import { engine } from "../../engines/registry.js";
import { loadExport } from "../load-export.js";
import { StateUsageError } from "./errors.js";
import {
  type ConnectionFlagNames,
  type ResolvedConnection,
  STATE_FLAG_NAMES,
  storeFlags,
} from "./options.js";

/**
 * What the command already has (the engine's OpenAdminContext is built from it): a DynamoDB client (the admin
 * owns it: `close` destroys it), its flags' names.
 */
export interface CommandAdminContext {
  /** Default: a client with the SDK's configuration and the options' endpoint and region. */
  dynamodb?: DynamoDBClient;
  /** The flags' names, for messages (`eonce run` names some otherwise). */
  flags?: ConnectionFlagNames;
}

/**
 * The admin of the store the options name, through its engine (src/engines/engine.ts). DynamoDB takes the AWS
 * SDK's standard configuration (credentials from the environment or the profile) with the endpoint and region given;
 * a client library that is an optional peer (node-postgres) is loaded only when asked for. A custom row mapping
 * (`--row-key`) is loaded here. Nothing is sent yet: a bad connection shows on the first request.
 */
export async function openAdmin(
  o: ResolvedConnection,
  context: CommandAdminContext = {},
): Promise<StateAdmin> {
  const flags = context.flags ?? STATE_FLAG_NAMES;
  const e = engine(o.store, o);
  const store = storeFlags(o, flags);
  // The options' check refused an engine without an admin (`STATE_STORE_KINDS`).
  if (!e.openAdmin) throw new StateUsageError(`${store}: the engine has no admin`);
  const mapping = e.inline ? await loadRowMapping(o, flags) : undefined;
  return e.openAdmin(o, {
    ...(context.dynamodb ? { dynamodb: context.dynamodb } : {}),
    ...(mapping ? { mapping } : {}),
    missingPeer: (peer, cause) => new StateUsageError(`${store} needs ${peer}: npm i ${peer}`, { cause }),
    usage: (message) => new StateUsageError(message),
  });
}

/** The inline store's custom rowKey and its inverse, loaded from their modules; none for the default mapping. */
async function loadRowMapping(o: ResolvedConnection, flags: ConnectionFlagNames): Promise<InlineRowMapping> {
  const load = async (spec: string | undefined, flag: string, defaultName: string) => {
    if (spec === undefined) return undefined;
    try {
      return (await loadExport(spec, { defaultName, what: flag })).fn as (text: string) => string;
    } catch (cause) {
      throw new StateUsageError(`${flag}: ${cause instanceof Error ? cause.message : String(cause)}`, {
        cause,
      });
    }
  };
  const rowKey = await load(o.rowKey, flags.rowKey, "rowKey");
  const stateKeyOfRow = await load(o.rowKeyInverse, flags.rowKeyInverse, "stateKeyOfRow");
  return { ...(rowKey ? { rowKey } : {}), ...(stateKeyOfRow ? { stateKeyOfRow } : {}) };
}
