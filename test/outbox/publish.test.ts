import { describe, expect, it } from "vitest";
import { OptionsError } from "../../src/core/errors.js";
import { createGuard } from "../../src/core/guard.js";
import { MalformedKeyError } from "../../src/core/key-text.js";
import { MemoryOutbox } from "../../src/engines/memory/outbox.js";
import { MemoryStore } from "../../src/engines/memory/store.js";
import { OutboxEntryInvalidError } from "../../src/outbox/errors.js";
import { relayOutbox } from "../../src/outbox/relay.js";
import type { ClaimedEntry, OutboxEntry } from "../../src/outbox/types.js";

const QUEUE = { kind: "sqs", queueUrl: "http://127.0.0.1:1/000000000000/q" } as const;
const BUS = { kind: "eventbridge", eventBusName: "default", source: "shop", detailType: "charged" } as const;

/** What `ctx.publish` throws inside a run, or undefined when it publishes. */
type LoosePublish = (...a: unknown[]) => string;

async function publishing(f: (publish: LoosePublish) => void) {
  const guard = createGuard({ store: new MemoryStore(), outbox: new MemoryOutbox() });
  const outcome = await guard.run({ subject: "s", identity: "i" }, async (ctx) => f(ctx.publish as never));
  return outcome.status === "failed" ? outcome.error : undefined;
}

describe("ctx.publish refuses what no relay could send", () => {
  it("without an outbox", async () => {
    const guard = createGuard({ store: new MemoryStore() });
    const r = await guard.run({ subject: "s", identity: "i" }, async (ctx) => ctx.publish(QUEUE, "x"));
    expect(r.status === "failed" && r.error).toBeInstanceOf(OptionsError);
  });

  it("a bad destination, message, name or attributes; a name used twice", async () => {
    const cases: [string, (p: LoosePublish) => void, unknown][] = [
      ["no queue URL", (p) => p({ kind: "sqs" }, "x"), OptionsError],
      ["an unknown kind", (p) => p({ kind: "kafka", topic: "t" }, "x"), OptionsError],
      ["undefined", (p) => p(QUEUE, undefined), OptionsError],
      [
        "a cycle",
        (p) => {
          const a: Record<string, unknown> = {};
          a.a = a;
          p(QUEUE, a);
        },
        OptionsError,
      ],
      ["EventBridge, not an object", (p) => p(BUS, [1, 2]), OptionsError],
      ["a name starting with #", (p) => p(QUEUE, "x", { name: "#1" }), OptionsError],
      ["a lone surrogate in the name", (p) => p(QUEUE, "x", { name: "a\uD800" }), MalformedKeyError],
      [
        "a name used twice",
        (p) => {
          p(QUEUE, "x", { name: "n" });
          p(QUEUE, "y", { name: "n" });
        },
        OptionsError,
      ],
      [
        "ten attributes",
        (p) =>
          p(QUEUE, "x", {
            attributes: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`a${i}`, "v"])),
          }),
        OptionsError,
      ],
      ["the id's attribute", (p) => p(QUEUE, "x", { attributes: { eonceMessageId: "v" } }), OptionsError],
      ["an attribute name SQS refuses", (p) => p(QUEUE, "x", { attributes: { "a b": "v" } }), OptionsError],
    ];
    for (const [what, f, type] of cases) expect(await publishing(f as never), what).toBeInstanceOf(type);
    expect(
      await publishing(((p: LoosePublish) =>
        p(QUEUE, "x", {
          attributes: Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`a${i}`, "v"])),
        })) as never),
    ).toBeUndefined();
  });
});

describe("the relay", () => {
  it("marks and counts an entry the sender refuses for good, so its subject's next message goes", async () => {
    const outbox = new MemoryOutbox();
    const guard = createGuard({ store: new MemoryStore(), outbox });
    for (const identity of ["first", "second"])
      await guard.run(
        { subject: "s", identity, position: identity === "first" ? "01" : "02" },
        async (ctx) => {
          ctx.publish(QUEUE, identity);
        },
      );
    const sent: string[] = [];
    const errors: unknown[] = [];
    const sender = {
      send: async (e: OutboxEntry) => {
        if (e.body === "first") throw new OutboxEntryInvalidError(e, "refused for good");
        sent.push(e.body);
      },
    };
    const rounds = [];
    for (let i = 0; i < 3; i++)
      rounds.push(
        await relayOutbox({ reader: outbox, sender, onSendError: (_: ClaimedEntry, e) => errors.push(e) }),
      );
    expect(rounds.map((r) => r.rejected)).toEqual([1, 0, 0]);
    expect(sent).toEqual(["second"]);
    expect(errors).toHaveLength(1);
    expect(await outbox.pending()).toEqual([]);
  });

  it("leaves an entry whose send failed to be sent again (not marked)", async () => {
    const outbox = new MemoryOutbox();
    const guard = createGuard({ store: new MemoryStore(), outbox });
    await guard.run({ subject: "s", identity: "i" }, async (ctx) => void ctx.publish(QUEUE, "m"));
    const r = await relayOutbox({
      reader: outbox,
      sender: {
        send: async () => {
          throw new Error("down");
        },
      },
      leaseMs: 1,
    });
    expect(r).toMatchObject({ claimed: 1, failed: 1, rejected: 0, sent: 0 });
    expect(await outbox.pending()).toHaveLength(1);
  });
});
