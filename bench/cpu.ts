import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

/**
 * CPU time of this process (the SDK client and every implementation's code) and of the DynamoDB Local JVM,
 * so a throughput run can say what one event costs in CPU: on a shared machine that is steadier than a rate.
 */
export interface CpuMeter {
  /** CPU milliseconds used since `start()`: by this process, and by the server (undefined if not found). */
  read(): { clientMs: number; serverMs: number | undefined };
  start(): void;
}

export function cpuMeter(endpoint: string): CpuMeter {
  const port = new URL(endpoint).port;
  const serverPid = findJavaByPort(port);
  const ticksPerSecond = clockTicks();
  let client0 = process.cpuUsage();
  let server0 = serverPid ? procCpuTicks(serverPid) : undefined;
  return {
    start() {
      client0 = process.cpuUsage();
      server0 = serverPid ? procCpuTicks(serverPid) : undefined;
    },
    read() {
      const c = process.cpuUsage(client0);
      const s = serverPid && server0 !== undefined ? procCpuTicks(serverPid) : undefined;
      return {
        clientMs: (c.user + c.system) / 1000,
        serverMs:
          s !== undefined && server0 !== undefined ? ((s - server0) * 1000) / ticksPerSecond : undefined,
      };
    },
  };
}

/** The DynamoDB Local JVM listening on `port` (Linux /proc; undefined elsewhere). */
export function findJavaByPort(port: string): number | undefined {
  try {
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      let cmdline: string;
      try {
        cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      } catch {
        continue;
      }
      const args = cmdline.split("\0");
      const i = args.indexOf("-port");
      if (args.some((a) => a.endsWith("DynamoDBLocal.jar")) && i >= 0 && args[i + 1] === port)
        return Number(entry);
    }
  } catch {
    // not Linux
  }
  return undefined;
}

function procCpuTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}

function clockTicks(): number {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
}
