import type { SQSBatchResponse } from "aws-lambda";
import { afterAll, describe, expect, it } from "vitest";
import { createGuard } from "../../src/core/guard.js";
import { MalformedKeyError } from "../../src/core/key-text.js";
import type { StateStore } from "../../src/core/store.js";
import { durableExecutionName } from "../../src/durable/execution-name.js";
import { markerKey } from "../../src/durable/step-keys.js";
import { MemoryStore } from "../../src/engines/memory/store.js";
import { SqliteStore } from "../../src/engines/sqlite/index.js";
import { sqsHandler } from "../../src/lambda/handlers.js";
import { lambdaContext, sqsEvent, sqsRecord } from "../kit/index.js";

/**
 * Two subjects that differ only by a lone surrogate: UTF-8 (what SQLite, PostgreSQL, Valkey and SHA-256 see) turns
 * both into `order\uFFFD`, so without the key rule the second event was answered `duplicate` and never ran.
 */
const TWINS = ["order\uD800", "order\uDC00"] as const;

const sqlite = new SqliteStore({ filename: ":memory:" });
afterAll(() => sqlite.close());
const STORES: [string, StateStore][] = [
  ["memory", new MemoryStore()],
  ["sqlite", sqlite],
];

describe("keys with lone surrogates or NUL are refused, never merged", () => {
  for (const [name, store] of STORES) {
    it(`${name}: the guard refuses each twin as malformed before any request; a well-formed U+FFFD subject runs`, async () => {
      const guard = createGuard({ store });
      const ran: string[] = [];
      for (const subject of TWINS) {
        await expect(
          guard.run({ subject, identity: "1" }, async () => {
            ran.push(subject);
          }),
        ).rejects.toBeInstanceOf(MalformedKeyError);
        await expect(guard.apply({ subject: "s", identity: subject }, () => "r")).rejects.toThrow(
          /identity is not well-formed Unicode/,
        );
      }
      await expect(guard.run({ subject: "a\0b", identity: "1" }, async () => 1)).rejects.toThrow(
        /subject contains NUL/,
      );
      const ok = await guard.run({ subject: "order\uFFFD", identity: "1" }, async () => "ran");
      expect(ok.status).toBe("processed");
      expect(ran).toEqual([]);
    });
  }

  it("the SQS wrapper takes the malformed route: a batch item failure, the handler never called", async () => {
    const calls: string[] = [];
    const handler = sqsHandler(
      async (e) => {
        if (e.kind === "message") calls.push(e.body);
      },
      { store: new MemoryStore(), messages: "accept", subject: (m) => JSON.parse(m.body).id as string },
    );
    const bad = sqsRecord(JSON.stringify({ id: TWINS[0] }), { messageId: "bad" });
    const good = sqsRecord(JSON.stringify({ id: "order\uFFFD" }), { messageId: "good" });
    const out = (await handler(sqsEvent(bad, good), lambdaContext())) as SQSBatchResponse;
    expect(out.batchItemFailures).toEqual([{ itemIdentifier: "bad" }]);
    expect(calls).toEqual([JSON.stringify({ id: "order\uFFFD" })]);
  });

  it("durable execution names and step markers refuse the twins instead of naming one execution or step", () => {
    for (const s of TWINS) {
      expect(() => durableExecutionName(s, "1")).toThrow(MalformedKeyError);
      expect(() => durableExecutionName("s", s)).toThrow(MalformedKeyError);
      const execution = {
        executionName: durableExecutionName("s", "1"),
        subject: "s",
        identity: "1",
        position: null,
      };
      expect(() => markerKey(execution, `charge${s}`)).toThrow(/step name is not well-formed Unicode/);
    }
  });
});
