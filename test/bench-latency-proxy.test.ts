import { once } from "node:events";
import { createServer, type Server, connect as tcpConnect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rng } from "../bench/events.js";
import { startLatencyProxy } from "../bench/latency-proxy.js";

/*
 * bench/latency-proxy.ts against an in-process echo server: every byte arrives, in order, through jitter larger than
 * the gaps between writes; and a round trip takes at least twice the one-way delay. Loose bounds only: the machine
 * may be loaded, so nothing here asserts how close to the delay a round trip stays.
 */
describe("latency proxy", () => {
  let echo: Server;
  let port: number;

  beforeAll(async () => {
    // Echoes every chunk and ends when the client does (a half-close must pass through the proxy too).
    echo = createServer((socket) => socket.pipe(socket));
    echo.listen(0, "127.0.0.1");
    await once(echo, "listening");
    port = (echo.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => echo.close(() => resolve())));

  it("delivers every byte in order in both directions, jitter or not", async () => {
    const proxy = await startLatencyProxy({
      target: { host: "127.0.0.1", port },
      oneWayMs: 5,
      jitterMs: 5,
      random: rng(7),
    });
    try {
      const socket = tcpConnect(proxy.port, "127.0.0.1");
      await once(socket, "connect");
      const received: Buffer[] = [];
      socket.on("data", (chunk: Buffer) => received.push(chunk));
      const sent: Buffer[] = [];
      for (let i = 0; i < 200; i++) {
        const chunk = Buffer.from(`${i},`.repeat(1 + (i % 7)));
        sent.push(chunk);
        socket.write(chunk);
        // Gaps shorter than the jitter, so that a later chunk is often drawn an earlier due time.
        if (i % 10 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
      }
      socket.end();
      await once(socket, "end");
      expect(Buffer.concat(received).toString()).toBe(Buffer.concat(sent).toString());
      const stats = proxy.stats();
      expect(stats.connections).toBe(1);
      expect(stats.bytes).toBe(2 * Buffer.concat(sent).length);
      socket.destroy();
    } finally {
      await proxy.close();
    }
  });

  it("delays a round trip by at least twice the one-way delay", async () => {
    const oneWayMs = 25;
    const proxy = await startLatencyProxy({ target: { host: "127.0.0.1", port }, oneWayMs });
    try {
      const socket = tcpConnect(proxy.port, "127.0.0.1");
      await once(socket, "connect");
      const rtts: number[] = [];
      for (let i = 0; i < 3; i++) {
        const t0 = performance.now();
        socket.write(`ping ${i}`);
        await once(socket, "data");
        rtts.push(performance.now() - t0);
      }
      socket.destroy();
      // Timers never fire early by more than the clock's rounding; late by how much depends on the load.
      for (const rtt of rtts) expect(rtt).toBeGreaterThanOrEqual(2 * oneWayMs - 2);
      expect(proxy.stats().lateMs).toBeGreaterThanOrEqual(0);
    } finally {
      await proxy.close();
    }
  });
});
