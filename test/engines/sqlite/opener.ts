/**
 * A child process of sqlite.test.ts: says `opening`, opens the store on the given file (waiting up to 20 s for the
 * write lock) and prints `ok` or the error. Usage: opener.ts <file>
 */
import { SqliteStore } from "../../../src/engines/sqlite/index.js";

const [filename] = process.argv.slice(2);
process.stdout.write("opening\n");
try {
  new SqliteStore({ filename: String(filename), busyTimeoutMs: 20_000 }).close();
  process.stdout.write("ok\n");
} catch (error) {
  process.stdout.write(`${error instanceof Error ? error.message : String(error)}\n`);
}
