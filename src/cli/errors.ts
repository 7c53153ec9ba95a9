/** An error as one line for stderr: its message's first line (causes and server output stay out). */
export function oneLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return (text.split("\n").find((l) => l.trim() !== "") ?? text).trim();
}

/**
 * After a failure, exit even if something still holds the event loop (a server a library failed to close):
 * a command that reported an error must not hang. The timer is unref'd, so a clean exit is not delayed.
 */
export function exitSoon(ms = 3000): void {
  setTimeout(() => process.exit(), ms).unref();
}
