import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";

/**
 * Counts the requests an SDK v3 client sends, per command, with a middleware in the `deserialize` step:
 * that step runs once per HTTP attempt, so SDK retries are counted too (they cost money as well).
 */
export interface RequestCounter {
  readonly counts: Readonly<Record<string, number>>;
  /** Requests sent so far, all commands together. */
  total(): number;
  /** Starts counting from zero. */
  reset(): void;
}

type AnyClient = Pick<DynamoDBClient, "middlewareStack">;

/** Counts the requests `client` sends, per command (e.g. `UpdateItem`), from now on. */
export function countRequests(client: AnyClient, name = "eonceRequestCounter"): RequestCounter {
  const counts: Record<string, number> = {};
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = String(context.commandName ?? "unknown").replace(/Command$/, "");
      counts[command] = (counts[command] ?? 0) + 1;
      return next(args);
    },
    { step: "deserialize", name, override: true },
  );
  return {
    counts,
    total: () => Object.values(counts).reduce((a, b) => a + b, 0),
    reset: () => {
      for (const k of Object.keys(counts)) delete counts[k];
    },
  };
}
