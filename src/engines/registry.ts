/**
 * The engines: the one list that the simulator (`npm run chaos -- --engine`), `eonce state --store`, `eonce run
 * --state-store`, `eonce audit table --engine`, the test kit (`EONCE_STORES`) and vitest.config.ts read. Adding an
 * engine is a folder of its own with its `Engine` (`engine.ts`) and one entry here (docs/store-authors.md); an engine
 * defined elsewhere (a test's, a plugin's) joins with `registerEngine`.
 *
 * An `Engine` is data and factories that load its modules when called: this file loads no engine module and no
 * client library, so the CLI and the test config read it freely.
 */
import { EffectivelyOnceError } from "../core/errors.js";
import { CONNECTION_KEYS } from "./connection.js";
import { dynamodbEngine } from "./dynamodb/engine.js";
import type { Engine } from "./engine.js";
import { memoryEngine } from "./memory/engine.js";
import { postgresEngine } from "./postgres/engine.js";
import { sqliteEngine } from "./sqlite/engine.js";
import { valkeyEngine } from "./valkey/engine.js";

/** The engines of this package. */
const BUILT_IN = [
  dynamodbEngine,
  memoryEngine,
  postgresEngine,
  sqliteEngine,
  valkeyEngine,
] as const satisfies readonly Engine[];

/** @deprecated An engine of the registry: its `Engine`. */
export type EngineEntry = Engine;

/** The name of an engine of this package. */
export type BuiltInEngineName = (typeof BUILT_IN)[number]["name"];

/** An engine's name: one of this package's, or one `registerEngine` added. */
export type EngineName = BuiltInEngineName | (string & {});

/** An engine's mode (`modeName`): `dynamodb`, or `dynamodb-inline` for its inline mode. */
export type EngineModeName = string;

/** Every engine, one per folder, in registration order (this package's first). Grows with `registerEngine`. */
export const ENGINES: readonly Engine[] = [...BUILT_IN];

/** The modes an engine runs in: itself, then its inline mode if it has one. */
const modesOf = (e: Engine): Engine[] => (e.inlineMode ? [e, e.inlineMode] : [e]);

/**
 * Every engine and, after it, its inline mode: what the test kit's store suites, the simulator's runs and
 * vitest.config.ts loop over, so that both modes stay covered (live, as ENGINES).
 */
export const ENGINE_MODES: readonly Engine[] = ENGINES.flatMap(modesOf);

/** How the test kit (`EONCE_STORES`) and the simulator's reports name a mode: `dynamodb`, `dynamodb-inline`. */
export function modeName(e: Engine): EngineModeName {
  return e.inline ? `${e.name}-inline` : e.name;
}

/** The names of every engine. Live: `registerEngine` adds to it (the CLI's option checks read it when they run). */
export const ENGINE_NAMES: readonly EngineName[] = ENGINES.map((e) => e.name);

/** The modes' names (`modeName`), live. */
export const MODE_NAMES: readonly EngineModeName[] = ENGINE_MODES.map(modeName);

/** The engines with an inline mode (`--inline`), live. */
export const INLINE_ENGINE_NAMES: readonly EngineName[] = ENGINES.filter((e) => e.inlineMode).map(
  (e) => e.name,
);

/** The engines behind a server (live, as ENGINE_NAMES). */
export const SERVER_ENGINE_NAMES: readonly EngineName[] = ENGINES.filter((e) => e.server).map((e) => e.name);

/** The engines with an admin: what `eonce state --store` and `eonce run --state-store` take (live). */
export const ADMIN_ENGINE_NAMES: readonly EngineName[] = ENGINES.filter((e) => e.openAdmin).map(
  (e) => e.name,
);

/** The engines `eonce audit table --engine` reads (live). */
export const AUDIT_ENGINE_NAMES: readonly EngineName[] = ENGINES.filter((e) => e.auditTable).map(
  (e) => e.name,
);

export function isEngineName(value: string): value is EngineName {
  return ENGINE_NAMES.includes(value);
}

/**
 * The engine a deprecated `<engine>-inline` name selects in its inline mode (the names before `--inline`:
 * `dynamodb-inline`, `postgres-inline`); undefined for any other text.
 */
export function inlineAlias(value: string): EngineName | undefined {
  const name = /^(.+)-inline$/.exec(value)?.[1];
  return name !== undefined && ENGINES.some((e) => e.name === name && e.inlineMode) ? name : undefined;
}

/** An engine `registerEngine` refused: `problems` says why, one line each. */
export class EngineRegistrationError extends EffectivelyOnceError {
  constructor(
    readonly problems: readonly string[],
    options?: ErrorOptions,
  ) {
    super(`registerEngine: ${problems.join("; ")}`, options);
  }
}

const NAME = /^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$/;
const FACTORIES = ["openAdmin", "prepareRunState", "openSimEnv", "auditTable", "where"] as const;

/** What is wrong with `e`'s name and its inline mode, if it has one. */
function namingProblems(e: Engine): string[] {
  const problems: string[] = [];
  if (typeof e?.name !== "string" || !NAME.test(e.name))
    problems.push(`name ${JSON.stringify(e?.name)} is not lowercase letters, digits and dashes`);
  else if (ENGINE_NAMES.includes(e.name)) problems.push(`an engine named ${e.name} is already registered`);
  else if (e.name.endsWith("-inline"))
    problems.push(`name ${e.name}: an inline mode is the engine's inlineMode`);
  if (e?.inline !== false) problems.push("inline must be false (the inline mode is inlineMode)");
  const mode = e?.inlineMode;
  if (mode === undefined) return problems;
  if (
    mode?.name !== e.name ||
    mode.folder !== e.folder ||
    mode.inline !== true ||
    mode.inlineMode !== undefined
  )
    problems.push("inlineMode must have the engine's name and folder, inline true, and no inlineMode");
  return [...problems, ...shapeProblems(mode).map((p) => `inlineMode: ${p}`)];
}

/** What is wrong with the fields of `e` (an engine or its inline mode). */
function shapeProblems(e: Engine): string[] {
  const problems: string[] = [];
  if (typeof e?.displayName !== "string" || e.displayName.trim() === "")
    problems.push("displayName must be a name to show");
  if (typeof e?.folder !== "string" || !NAME.test(e.folder))
    problems.push(`folder ${JSON.stringify(e?.folder)} is not lowercase letters, digits and dashes`);
  for (const flag of ["server", "inline", "durable"] as const)
    if (typeof e?.[flag] !== "boolean") problems.push(`${flag} must be a boolean`);
  for (const list of ["connection", "requires"] as const)
    for (const key of Array.isArray(e?.[list]) ? e[list] : [`(${list} is not a list)`])
      if (!CONNECTION_KEYS.includes(key)) problems.push(`${list}: ${key} is not a connection option`);
  for (const key of Array.isArray(e?.requires) ? e.requires : [])
    if (key !== "table" && !e.connection?.includes(key)) problems.push(`requires ${key}, not in connection`);
  for (const [key, variable] of Object.entries(e?.env ?? {}))
    if (!CONNECTION_KEYS.includes(key as never) || !/^[A-Z_][A-Z0-9_]*$/.test(String(variable)))
      problems.push(`env: ${key} → ${String(variable)} is not a connection option and a variable name`);
  const limits = e?.limits;
  if (!(limits?.maxResultBytes >= 1) || !(limits?.maxWritesPerCommit >= 1))
    problems.push("limits.maxResultBytes and limits.maxWritesPerCommit must be at least 1");
  if (e?.localServer && !e.env?.[e.localServer.option])
    problems.push(`localServer: its option ${e.localServer.option} has no variable in env`);
  if (!Array.isArray(e?.serverFaults)) problems.push("serverFaults must be a list");
  for (const f of FACTORIES)
    if (e?.[f] !== undefined && typeof e[f] !== "function") problems.push(`${f} must be a function`);
  if (typeof e?.openSimEnv !== "function" || typeof e?.where !== "function")
    problems.push("openSimEnv and where are required");
  return problems;
}

/** What is wrong with `e` as an engine; none when it can join. */
function problemsOf(e: Engine): string[] {
  return [...namingProblems(e), ...shapeProblems(e)];
}

/**
 * Adds an engine defined outside this package's folders: from then on the CLI, the simulator and the test kit take
 * its name as they take this package's. Throws an `EngineRegistrationError` for an engine that is malformed or whose
 * name is taken. Register before building a CLI program: its help lists the names it saw.
 */
export function registerEngine(e: Engine): Engine {
  const problems = problemsOf(e);
  if (problems.length > 0) throw new EngineRegistrationError(problems);
  (ENGINES as Engine[]).push(e);
  (ENGINE_MODES as Engine[]).push(...modesOf(e));
  (MODE_NAMES as EngineModeName[]).push(...modesOf(e).map(modeName));
  (ENGINE_NAMES as EngineName[]).push(e.name);
  if (e.inlineMode) (INLINE_ENGINE_NAMES as EngineName[]).push(e.name);
  if (e.server) (SERVER_ENGINE_NAMES as EngineName[]).push(e.name);
  if (e.openAdmin) (ADMIN_ENGINE_NAMES as EngineName[]).push(e.name);
  if (e.auditTable) (AUDIT_ENGINE_NAMES as EngineName[]).push(e.name);
  return e;
}

/**
 * The engine named `name`, in its inline mode with `inline` (or for a deprecated `<engine>-inline` name); an
 * `EngineRegistrationError` for a name no engine has, or an inline mode it lacks.
 */
export function engine(name: EngineName, mode: { inline?: boolean | undefined } = {}): Engine {
  const alias = inlineAlias(name);
  const found = ENGINES.find((e) => e.name === (alias ?? name));
  if (!found) throw new EngineRegistrationError([`no engine named ${name} (${ENGINE_NAMES.join(", ")})`]);
  if (!mode.inline && alias === undefined) return found;
  if (!found.inlineMode)
    throw new EngineRegistrationError([
      `the ${name} engine has no inline mode (${INLINE_ENGINE_NAMES.join(", ")} have one)`,
    ]);
  return found.inlineMode;
}

/** @deprecated The engine itself: `engine(name)`. */
export async function engineKit(name: EngineName): Promise<Engine> {
  return engine(name);
}
