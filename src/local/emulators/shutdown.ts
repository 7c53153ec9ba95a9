/**
 * Stops the local runtime on Ctrl-C or SIGTERM, so DynamoDB Local (a Java child process) and the
 * servers' temp directories do not outlive the command. A second signal exits at once.
 */
export function onShutdownSignal(stop: () => Promise<void>): () => void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    const code = signal === "SIGINT" ? 130 : 143;
    if (stopping) process.exit(code);
    stopping = true;
    process.stderr.write(`\n${signal}: stopping the local servers…\n`);
    void stop()
      .catch((error: unknown) => process.stderr.write(`error while stopping: ${String(error)}\n`))
      .finally(() => process.exit(code));
  };
  process.on("SIGINT", handler);
  process.on("SIGTERM", handler);
  return () => {
    process.off("SIGINT", handler);
    process.off("SIGTERM", handler);
  };
}
