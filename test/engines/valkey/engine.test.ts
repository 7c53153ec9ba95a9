import { describe, expect, it } from "vitest";
import { OptionsError } from "../../../src/core/errors.js";
import { valkeyEngine } from "../../../src/engines/valkey/engine.js";
import { ValkeyStore } from "../../../src/engines/valkey/store.js";
import { claimOf, deleteKeys, testClient, testPrefix, VALKEY_URL } from "./harness.js";

const context = {
  missingPeer: (peer: string) => new Error(`missing ${peer}`),
  usage: (message: string) => new Error(message),
};

describe("valkey engine", () => {
  it("opens an admin on --url and --key-prefix, and names the connection without its password", async () => {
    const prefix = testPrefix();
    const client = testClient();
    await new ValkeyStore({ client, keyPrefix: prefix }).claim(claimOf("o#kit", 1));
    const admin = await valkeyEngine.openAdmin({ url: VALKEY_URL, keyPrefix: prefix }, context);
    try {
      expect((await admin.list({ limit: 10, nowMs: Date.now() })).map((r) => r.key)).toEqual(["o#kit"]);
    } finally {
      await admin.close();
      await deleteKeys(client, prefix);
      await client.quit();
    }
    expect(valkeyEngine.where({ url: "redis://user:secret@cache:6380/2", keyPrefix: "app:" })).toBe(
      "valkey redis://user:***@cache:6380/2 app:",
    );
    await expect(
      valkeyEngine.openAdmin({ url: VALKEY_URL, keyPrefix: "a{b" }, context),
    ).rejects.toBeInstanceOf(OptionsError);
  });
});
