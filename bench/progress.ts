import cliProgress from "cli-progress";

/** Progress of a long run; a no-op unless stderr is a terminal (logs and CI output stay clean). */
export interface Progress {
  phase(name: string, total: number): void;
  tick(step?: number): void;
  stop(): void;
}

export const silentProgress: Progress = { phase() {}, tick() {}, stop() {} };

export function terminalProgress(
  stream: NodeJS.WritableStream & { isTTY?: boolean } = process.stderr,
): Progress {
  if (!stream.isTTY) return silentProgress;
  const bar = new cliProgress.SingleBar(
    {
      stream,
      format: "{phase} |{bar}| {value}/{total} deliveries | {duration_formatted}",
      hideCursor: true,
      clearOnComplete: true,
    },
    cliProgress.Presets.shades_classic,
  );
  let started = false;
  return {
    phase(name, total) {
      if (!started) {
        bar.start(total, 0, { phase: name.padEnd(34) });
        started = true;
      } else {
        bar.setTotal(total);
        bar.update(0, { phase: name.padEnd(34) });
      }
    },
    tick(step = 1) {
      if (started) bar.increment(step);
    },
    stop() {
      if (started) bar.stop();
    },
  };
}
