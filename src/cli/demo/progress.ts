import cliProgress from "cli-progress";
import type { DemoProgress } from "./run-demo.js";

/**
 * A progress bar per scenario part on stderr, only when stderr is a terminal (pipes and CI logs get
 * nothing; stdout stays clean for the table or the JSON).
 */
export function progressBar(stream: NodeJS.WriteStream = process.stderr): {
  update(p: DemoProgress): void;
  stop(): void;
} {
  if (!stream.isTTY) return { update() {}, stop() {} };
  let bar: cliProgress.SingleBar | undefined;
  let part = "";
  return {
    update(p) {
      const name = `${p.scenario} · guard ${p.guard}`;
      if (name !== part) {
        bar?.stop();
        part = name;
        bar = new cliProgress.SingleBar(
          {
            stream,
            format: `${name.padEnd(18)} {bar} {value}/{total} runs`,
            hideCursor: false,
            clearOnComplete: false,
          },
          cliProgress.Presets.shades_classic,
        );
        bar.start(p.total, p.done);
      }
      bar?.update(p.done);
    },
    stop() {
      bar?.stop();
      bar = undefined;
    },
  };
}
