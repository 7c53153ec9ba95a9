import type { RequestCounter } from "../../observe/request-counter.js";
import type { ValkeyClient } from "./client.js";

/**
 * Counts the commands `client` sends, per command (`EVALSHA`, `WAIT`, …), by wrapping its `sendCommand`: every
 * command passes there, pipelined ones too, and so do ioredis's own resends after a reconnect. Only commands sent on
 * a ready connection count: a command issued while connecting passes once to be queued and again when the queue is
 * sent, and the connection's handshake (HELLO, CLIENT SETINFO, INFO) is not a step's. One command without a pipeline
 * is one round trip; a pipeline is one round trip for all its commands. For tests and the bench.
 */
export function countValkeyCommands(client: ValkeyClient): RequestCounter {
  const counts: Record<string, number> = {};
  const target = client as unknown as {
    sendCommand: (command: { name: string }, ...rest: unknown[]) => unknown;
  };
  const send = target.sendCommand.bind(client);
  target.sendCommand = (command, ...rest) => {
    if (client.status === "ready") {
      const name = String(command?.name ?? "unknown").toUpperCase();
      counts[name] = (counts[name] ?? 0) + 1;
    }
    return send(command, ...rest);
  };
  return {
    counts,
    total: () => Object.values(counts).reduce((a, b) => a + b, 0),
    reset: () => {
      for (const k of Object.keys(counts)) delete counts[k];
    },
  };
}
