import { describe, expect, it } from "vitest";
import { eventBridgeDetail } from "../../src/cli/run/envelopes.js";
import { type ReplayMessage, streamItem } from "../../src/cli/run/messages.js";
import { OptionsError } from "../../src/core/errors.js";

const message = (body: string): ReplayMessage => ({ label: "m.jsonl:3", body });

describe("eonce run: a message body that must be a JSON object", () => {
  it("is the EventBridge detail and the stream item when it is one", () => {
    expect(eventBridgeDetail(message('{"a":1}'))).toEqual({ a: 1 });
    expect(streamItem(message('{"pk":"k","n":2}'))).toEqual({ pk: "k", n: 2 });
  });

  it.each(["not json", "[1]", "null", '"text"', "3"])("is refused, naming the message, for %s", (body) => {
    expect(() => eventBridgeDetail(message(body))).toThrow(
      new OptionsError("m.jsonl:3: an EventBridge event's detail must be a JSON object"),
    );
    expect(() => streamItem(message(body))).toThrow(
      new OptionsError("m.jsonl:3: --source dynamodb-streams writes each body as an item: a JSON object"),
    );
  });

  it("still needs the stream item's pk", () => {
    expect(() => streamItem(message('{"pk":""}'))).toThrow(/non-empty string "pk"/);
  });
});
