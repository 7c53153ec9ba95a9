import type { Command } from "commander";
import { type Resolved, resolveOptions, type Schema } from "../core/options.js";
import type { StateAdmin } from "../core/state-admin.js";
import { exitSoon, oneLine } from "./errors.js";
import { addSchemaOptions, type FlagSpec } from "./options.js";
import {
  forgetState,
  getState,
  listStates,
  releaseState,
  type StateTarget,
  targetOf,
} from "./state/actions.js";
import { openAdmin } from "./state/connect.js";
import {
  exitCodeOf,
  type StateExitCode,
  StateNotFoundError,
  StateRefusedError,
  StateUsageError,
} from "./state/errors.js";
import { formatRecord, formatTable } from "./state/format.js";
import {
  CONNECTION_FLAGS,
  LIST_FLAGS,
  listsByRow,
  type ResolvedConnection,
  resolveConnection,
  STATE_CONNECTION_OPTIONS,
  STATE_FORGET_OPTIONS,
  STATE_LIST_OPTIONS,
  STATE_RELEASE_OPTIONS,
} from "./state/options.js";
import { describeHolder, viewOf } from "./state/view.js";

/** Where `eonce state` writes, how it exits, and its clock: the process's, or a test's. */
export interface StateIo {
  out(text: string): void;
  err(text: string): void;
  exit(code: StateExitCode): void;
  now(): number;
}

const PROCESS_IO: StateIo = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  exit: (code) => {
    process.exitCode = code;
    // A connection a driver failed to close must not keep a failed command running.
    if (code !== 0) exitSoon();
  },
  now: () => Date.now(),
};

export const STATE_EXIT_CODES = `
Exit codes:
  0  done
  1  not found, or refused (the fence moved; a live lease holds the record)
  2  usage or connection error`;

const TARGET = "a subject (its ordered state key o#<subject> is used) or a state key (o#… or u#…)";

const BY_ROW_NOTE =
  "(listed by row: --row-key has no --row-key-inverse to name their state keys; get, release and forget take " +
  "a subject or a state key)";

/**
 * `eonce state`: an operator's view of the guard's state in any shipped store (docs/cli-state.md). `get` decodes a
 * record, `list` shows held or stuck subjects first, `release` is the store's conditional release, `forget` a
 * conditional delete that refuses while a live lease holds the record.
 */
export function registerState(program: Command, io: StateIo = PROCESS_IO): Command {
  const state = program
    .command("state")
    .description("find a subject's guard state, see why it is held, release or forget it")
    .addHelpText("after", STATE_EXIT_CODES);
  registerGet(state, io);
  registerList(state, io);
  registerRelease(state, io);
  registerForget(state, io);
  return state;
}

/** How a subcommand differs from the others: its help line, and its own options besides the connection's. */
interface SubcommandSpec<S extends Schema> {
  description: string;
  options: S;
  flags?: { [K in keyof S]?: FlagSpec };
}

const SUBCOMMANDS = {
  get: { description: "print the state record of a subject or state key", options: {} },
  list: {
    description:
      "list state records, held or stuck first: running with an expired lease, running, released, done",
    options: STATE_LIST_OPTIONS,
    flags: LIST_FLAGS,
  },
  release: {
    description:
      "release a running claim, only while it still holds --fence (the store's conditional release)",
    options: STATE_RELEASE_OPTIONS,
  },
  forget: {
    description:
      "delete a record so that the next delivery runs again (refused while a lease holds it, until --clock-skew-ms " +
      "after its end; --force deletes anyway)",
    options: STATE_FORGET_OPTIONS,
  },
} satisfies Record<string, SubcommandSpec<Schema>>;

type SubcommandName = keyof typeof SUBCOMMANDS;
type OwnOptions<N extends SubcommandName> = Resolved<(typeof SUBCOMMANDS)[N]["options"]>;
type Flags = Record<string, unknown>;
type Body = (admin: StateAdmin, nowMs: number, connection: ResolvedConnection) => Promise<string>;

/**
 * A subcommand with the connection flags and its own (SUBCOMMANDS); its action checks every option (its own, then
 * the connection's) before it connects, then runs the body `prepare` returned for its own options, and closes the
 * store.
 */
function subcommand<N extends SubcommandName>(state: Command, io: StateIo, name: N) {
  const spec: SubcommandSpec<Schema> = SUBCOMMANDS[name];
  const command = state.command(name).description(spec.description).addHelpText("after", STATE_EXIT_CODES);
  const connection = addSchemaOptions(command, STATE_CONNECTION_OPTIONS, CONNECTION_FLAGS);
  const ownOptions = addSchemaOptions(command, spec.options, spec.flags);
  const act = async (flags: Flags, prepare: (options: OwnOptions<N>) => Body) => {
    const what = `eonce state ${name}`;
    let admin: StateAdmin | undefined;
    try {
      const body = prepare(resolveOptions(what, spec.options, ownOptions(flags)) as OwnOptions<N>);
      const resolved = resolveConnection(what, connection(flags));
      admin = await openAdmin(resolved);
      io.out(`${await body(admin, io.now(), resolved)}\n`);
      io.exit(0);
    } catch (error) {
      io.err(`${what}: ${oneLine(error)}\n`);
      const nothingDone = error instanceof StateNotFoundError || error instanceof StateRefusedError;
      if (flags.json && nothingDone) io.out(`${JSON.stringify(errorJson(error, io.now()))}\n`);
      io.exit(exitCodeOf(error));
    } finally {
      await admin?.close().catch(() => {});
    }
  };
  return { command, act };
}

/** A subcommand on one record (`get`, `release`, `forget`): its `<subject|key>` argument, read before it connects. */
function recordSubcommand<N extends Exclude<SubcommandName, "list">>(
  state: Command,
  io: StateIo,
  name: N,
  body: (target: StateTarget, options: OwnOptions<N>, flags: Flags) => Body,
): Command {
  const { command, act } = subcommand(state, io, name);
  return command
    .argument("<subject|key>", TARGET)
    .action((text: string, flags: Flags) => act(flags, (options) => body(targetOf(text), options, flags)));
}

/** `--json`'s answer when nothing was done (exit 1): why, and what holds instead. */
function errorJson(error: StateNotFoundError | StateRefusedError, nowMs: number): Record<string, unknown> {
  if (error instanceof StateNotFoundError) return { error: "not-found", key: error.key };
  return { error: "refused", message: error.message, key: error.key, state: viewOf(error.state, nowMs) };
}

function registerGet(state: Command, io: StateIo): void {
  const command = recordSubcommand(state, io, "get", (target, _options, flags) => async (admin, nowMs) => {
    const view = await getState(admin, target, nowMs);
    if (flags.json) return JSON.stringify({ ...view, subject: target.subject ?? null });
    return formatRecord(view, target.subject);
  });
  command.option("--json", "print the record as JSON");
}

function registerList(state: Command, io: StateIo): void {
  const { command, act } = subcommand(state, io, "list");
  command.option("--json", "print the records as JSON").action((flags: Flags) =>
    act(flags, (options) => async (admin, nowMs, connection) => {
      const views = await listStates(admin, options, nowMs);
      if (!listsByRow(connection))
        return flags.json ? JSON.stringify({ count: views.length, records: views }) : formatTable(views);
      // A custom --row-key without its inverse: the admin named each record by its row (docs/cli-state.md).
      if (flags.json) {
        const records = views.map((v) => ({ ...v, key: null, row: v.key }));
        return JSON.stringify({ count: views.length, listedBy: "row", records });
      }
      return `${formatTable(views, "ROW")}\n${BY_ROW_NOTE}`;
    }),
  );
}

function registerRelease(state: Command, io: StateIo): void {
  const command = recordSubcommand(
    state,
    io,
    "release",
    (target, { fence }, flags) =>
      async (admin, nowMs) => {
        const view = await releaseState(admin, target, fence, nowMs);
        if (flags.json) return JSON.stringify({ released: true, record: view });
        return `released ${target.key} at fence ${fence}: a redelivery can claim it now\n${formatRecord(view, target.subject)}`;
      },
  );
  command.option("--json", "print the record after the release as JSON");
}

function registerForget(state: Command, io: StateIo): void {
  const command = recordSubcommand(state, io, "forget", (target, options, flags) => async (admin, nowMs) => {
    if (!flags.yes) {
      const record = await admin.store.read(target.key);
      const what = record ? `(${describeHolder(viewOf(record, nowMs))})` : "(no record: nothing to delete)";
      throw new StateUsageError(`would delete ${target.key} ${what}; add --yes to delete it`);
    }
    const view = await forgetState(admin, target, { ...options, nowMs });
    if (flags.json) return JSON.stringify({ forgotten: true, record: view });
    return `forgot ${target.key} (${describeHolder(view)}): the next delivery runs again`;
  });
  command
    .option("--yes", "delete it (without: say what would be deleted, and exit 2)")
    .option("--json", "print the deleted record as JSON");
}
