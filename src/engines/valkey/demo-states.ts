import type { DemoStates } from "../engine.js";

/**
 * `eonce demo --state-store valkey`: a key prefix per run on a Valkey of the demo's own
 * (src/local/emulators/valkey-local.ts), unless VALKEY_URL names a running one (whose keys are deleted at the end).
 */
export async function valkeyDemoStates(): Promise<DemoStates> {
  const [{ Redis }, { ValkeyStore }] = await Promise.all([import("ioredis"), import("./store.js")]);
  const { startValkeyLocal } = await import("../../local/emulators/valkey-local.js");
  const server = process.env.VALKEY_URL ? undefined : await startValkeyLocal();
  const client = new Redis(server?.url ?? (process.env.VALKEY_URL as string), { maxRetriesPerRequest: 2 });
  const prefixes: string[] = [];
  return {
    async open(_, name) {
      prefixes.push(`eonce-demo:${name}:`);
      return new ValkeyStore({ client, keyPrefix: `eonce-demo:${name}:` });
    },
    async close() {
      if (!server) {
        for (const prefix of prefixes) {
          const keys = await client.keys(`${prefix}*`);
          if (keys.length > 0) await client.del(...keys);
        }
      }
      client.disconnect();
      await server?.stop();
    },
  };
}
