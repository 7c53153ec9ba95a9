#!/usr/bin/env node
// The README's five-minute starts, followed as a new user would: each start's code blocks are taken out of README.md
// (between `<!-- start: name -->` and `<!-- end: name -->`: a `ts` block whose first line names its file, `sh` blocks
// of commands), the packed package is installed into a new project with the README's install line, every file is
// type-checked, and every command runs in the start's folder; `eonce run` commands also get `--json`, and their
// report is checked. Used by test/docs/readme-starts.test.ts, which also counts the rows the runs left.
//
//   node scripts/readme-starts.mjs [name …]   (the PostgreSQL start runs when DATABASE_URL is set)
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { packedProject, scratchRoot, sh } from "./packed-project.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));

const BLOCK = /```(\w+)\n([\s\S]*?)```/g;
const MARKED = /<!-- start: ([\w-]+) -->([\s\S]*?)<!-- end: \1 -->/g;

/** A `sh` block's commands: `\` continuations joined, comments and blank lines left out. */
function commands(block) {
  return block
    .replace(/\\\n\s*/g, "")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith("#"));
}

/** The marked starts of a README: `{ name, files: { path: text }, commands: string[] }` in order. */
export function readmeStarts(markdown) {
  return [...markdown.matchAll(MARKED)].map(([, name, body]) => {
    const files = {};
    const cmds = [];
    for (const [, lang, code] of body.matchAll(BLOCK)) {
      if (lang === "sh") cmds.push(...commands(code));
      else {
        const path = /^\/\/ ([\w./-]+\.\w+)/.exec(code)?.[1];
        if (!path)
          throw new Error(`start ${name}: a ${lang} block whose first line names no file ("// name.ts: …")`);
        files[path] = code;
      }
    }
    return { name, files, commands: cmds };
  });
}

/** The packages the README's install section adds with `npm i -D --save-exact …`. */
export function readmeDevPackages(markdown) {
  const line = /^npm i -D --save-exact (.+?)\s*(#.*)?$/m.exec(markdown);
  if (!line?.[1]) throw new Error("README.md: no `npm i -D --save-exact …` line in the install section");
  return line[1].split(/\s+/);
}

/** `eonce run`'s flags as a map of flag → values (repeatable flags keep every value). */
export function runFlags(command) {
  const flags = new Map();
  const tokens = command.split(/\s+/);
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    if (!t?.startsWith("--")) continue;
    const value = tokens[i + 1]?.startsWith("--") ? "" : (tokens[++i] ?? "");
    flags.set(t, [...(flags.get(t) ?? []), value]);
  }
  return flags;
}

/**
 * An `eonce run` command's arguments (after `npx eonce`), with `--json`, the DynamoDB to use, and every table it names
 * renamed with `suffix` (tables of one shared DynamoDB Local must not meet another test's).
 */
export function eonceArgs(command, { dynamodbEndpoint, suffix } = {}) {
  if (/["'$`|;&<>]/.test(command)) throw new Error(`not a plain eonce command: ${command}`);
  const args = command.split(/\s+/).slice(2);
  if (suffix) {
    const flags = runFlags(command);
    const names = new Set([
      ...(flags.get("--table") ?? []).map((t) => t.split(":")[0]),
      ...(flags.get("--state-table") ?? []),
    ]);
    const rename = (name) => (names.has(name) ? `${name}-${suffix}` : name);
    for (let i = 1; i < args.length; i++) {
      const flag = args[i - 1];
      if (flag === "--table" || flag === "--effects") args[i] = args[i].replace(/^[^:]+/, (n) => rename(n));
      else if (flag === "--state-table") args[i] = rename(args[i]);
      else if (flag === "--env") args[i] = args[i].replace(/=(.*)$/, (_, v) => `=${rename(v)}`);
    }
  }
  if (dynamodbEndpoint) args.push("--dynamodb-endpoint", dynamodbEndpoint);
  return [...args, "--json"];
}

/** What a run's JSON report says went wrong: empty when every invariant held and every event got through. */
export function reportProblems(report) {
  if (!report) return ["no JSON report"];
  const problems = report.invariants
    .filter((c) => c.status === "fail")
    .map((c) => `${c.id} ${c.title}: ${c.detail}`);
  if (report.unsuccessful.total > 0) problems.push(`${report.unsuccessful.total} events never got through`);
  if (report.outcomes.processed === 0) problems.push("no event processed");
  for (const e of report.errors)
    problems.push(`handler error: ${e.count}× ${e.error}${e.at ? ` (at ${e.at})` : ""}`);
  return problems;
}

/** A new project with the packed package and the README's install line, each start's files in a folder of its own. */
export async function prepareStarts({ dir, env = process.env }) {
  const markdown = await readFile(join(root, "README.md"), "utf8");
  const starts = readmeStarts(markdown);
  const pkg = JSON.parse(await readFile(join(root, "package.json"), "utf8"));
  const d = pkg.devDependencies;
  const files = {
    "tsconfig.json": JSON.stringify({
      compilerOptions: {
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        types: ["node"],
      },
      include: ["*/*.ts"],
    }),
  };
  for (const s of starts)
    for (const [path, text] of Object.entries(s.files)) files[`${s.name}/${path}`] = text;
  const packages = [
    ...readmeDevPackages(markdown),
    `pg@${d.pg}`,
    `typescript@${d.typescript}`,
    `@types/node@${d["@types/node"]}`,
    `@types/pg@${d["@types/pg"]}`,
  ];
  const { project } = await packedProject({ root, dir, packages, files, env });
  return { project, starts };
}

/** tsc over every start's files (strict, NodeNext, as a new ES module project). */
export function typecheckStarts(project, env = process.env) {
  return sh(join(project, "node_modules/.bin/tsc"), ["-p", "tsconfig.json"], { cwd: project, env });
}

/**
 * Runs a start's commands in its folder, in order, stopping at the first that fails. `eonce run` commands get
 * `eonceArgs`'s additions, and their report parsed.
 */
export async function runStart(project, start, { env = process.env, dynamodbEndpoint, suffix } = {}) {
  const cwd = join(project, start.name);
  const results = [];
  for (const command of start.commands) {
    const eonce = command.startsWith("npx eonce ");
    const r = eonce
      ? await sh("npx", ["--no-install", "eonce", ...eonceArgs(command, { dynamodbEndpoint, suffix })], {
          cwd,
          env,
        })
      : await sh("bash", ["-euo", "pipefail", "-c", command], { cwd, env });
    let report;
    if (eonce) {
      try {
        report = JSON.parse(r.stdout.trim().split("\n").at(-1) ?? "");
      } catch {}
    }
    results.push({ command, ...r, report });
    if (r.code !== 0) break;
  }
  return results;
}

async function main(names) {
  const dir = await mkdtemp(join(await scratchRoot(), "eonce-readme-starts-"));
  let failed = 0;
  try {
    process.stderr.write("packing and installing into a new project…\n");
    const { project, starts } = await prepareStarts({ dir });
    const tsc = await typecheckStarts(project);
    if (tsc.code !== 0) {
      failed++;
      process.stderr.write(`type-check failed:\n${tsc.stdout}${tsc.stderr}\n`);
    }
    for (const start of starts.filter((s) => names.length === 0 || names.includes(s.name))) {
      if (start.commands.some((c) => c.includes("--state-store postgres")) && !process.env.DATABASE_URL) {
        process.stdout.write(`${start.name}: skipped (no DATABASE_URL)\n`);
        continue;
      }
      const results = await runStart(project, start);
      const last = results.at(-1);
      const problems =
        last?.code === 0
          ? results.filter((r) => r.command.startsWith("npx eonce ")).flatMap((r) => reportProblems(r.report))
          : [`\`${last?.command}\` exited ${last?.code}: ${last?.stderr.trim()}`];
      if (problems.length > 0) failed++;
      process.stdout.write(
        `${start.name}: ${problems.length === 0 ? "ok" : `FAIL\n  ${problems.join("\n  ")}`}\n`,
      );
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  process.exitCode = failed > 0 ? 1 : 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main(process.argv.slice(2));
