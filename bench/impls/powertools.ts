import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  makeIdempotent,
} from "@aws-lambda-powertools/idempotency";
import { DynamoDBPersistenceLayer } from "@aws-lambda-powertools/idempotency/dynamodb";
import { PutItemCommand } from "@aws-sdk/client-dynamodb";
import type { S3EventRecord } from "aws-lambda";
import { lambdaContext } from "../../test/kit/context.js";
import type { BenchEvent } from "../events.js";
import { createTable, dropTables } from "../tables.js";
import {
  type DeliveryResult,
  effectRow,
  type HandlerPlan,
  type Implementation,
  newStats,
  runHandler,
} from "./types.js";

/** The Lambda timeout the in-progress record expires after (the same 30 s as our guard's lease). */
const FUNCTION_TIMEOUT_MS = 30_000;

/**
 * The real `@aws-lambda-powertools/idempotency`, configured as its docs recommend for a record processor:
 * `makeIdempotent` around the per-record function, a `DynamoDBPersistenceLayer` on a table keyed by `id`
 * (our client, so the same keep-alive agent and request counter), `eventKeyJmesPath` selecting what
 * identifies the S3 event, `throwOnNoIdempotencyKey`, and `registerLambdaContext` so that an in-progress
 * record expires with the invocation. The effect is the same plain PutItem as the unguarded handler's.
 */
export const powertools: Implementation = {
  name: "powertools",
  description: "@aws-lambda-powertools/idempotency 2.35.0: makeIdempotent + DynamoDBPersistenceLayer",
  async open({ client, prefix }) {
    const idempotencyTable = `${prefix}-idem`;
    const out = `${prefix}-out`;
    await createTable(client, idempotencyTable, "id");
    await createTable(client, out);
    const stats = newStats();
    const persistenceStore = new DynamoDBPersistenceLayer({
      tableName: idempotencyTable,
      awsSdkV3Client: client,
    });
    const config = new IdempotencyConfig({
      eventKeyJmesPath: "[s3.bucket.name, s3.object.key, s3.object.sequencer, eventName]",
      throwOnNoIdempotencyKey: true,
    });
    // The record is what Powertools hashes; the rest of the call rides along in the second argument.
    interface Call {
      event: BenchEvent;
      plan: HandlerPlan;
      ran: boolean;
    }
    const processRecord = makeIdempotent(
      async (_record: S3EventRecord, call: Call) => {
        call.ran = true;
        const event = call.event;
        return runHandler(stats, event, call.plan, () =>
          client.send(
            new PutItemCommand({
              TableName: out,
              Item: effectRow(event),
            }),
          ),
        );
      },
      { persistenceStore, config, dataIndexArgument: 0 },
    );
    return {
      outputTable: out,
      stats,
      async deliver(event, plan): Promise<DeliveryResult> {
        const call: Call = { event, plan, ran: false };
        // Each delivery is an invocation with the full timeout ahead of it.
        config.registerLambdaContext(
          lambdaContext({ functionName: "bench-powertools", timeoutMs: FUNCTION_TIMEOUT_MS, memoryMb: 1024 }),
        );
        try {
          await processRecord(event.record, call);
          return { outcome: call.ran ? "processed" : "duplicate", ack: true };
        } catch (error) {
          if (error instanceof IdempotencyAlreadyInProgressError) return { outcome: "in-flight", ack: false };
          throw error;
        }
      },
      close: () => dropTables(client, [idempotencyTable, out]),
    };
  },
};
