// The package as users get it, in a new project: `npm pack` of this repository, the tarball installed into a new
// folder with the packages a user would add, from the registry this machine reaches or npm's cache. Used by
// test/consumer.test.ts and scripts/readme-starts.mjs (and its test).
import { execFile } from "node:child_process";
import { mkdir, readFile, rm, stat, statfs, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

/** Runs a command and never throws: the exit code (-1 when it could not run or timed out) and its output. */
export function sh(cmd, args, { cwd, env = process.env, timeout = 300_000 } = {}) {
  return new Promise((resolve) => {
    execFile(
      cmd,
      args,
      { cwd, env, encoding: "utf8", maxBuffer: 64 * 1024 * 1024, timeout },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : -1) : 0;
        resolve({ code, stdout: stdout ?? "", stderr: error && !stderr ? error.message : (stderr ?? "") });
      },
    );
  });
}

/**
 * Where to make a packed project: /dev/shm when it is a tmpfs that lets programs run and has `minBytes` free, else the
 * OS's temp folder. npm extracts some 35,000 files into the consumer test's project; on ext4 that is the file
 * system's work more than npm's (measured on a loaded 2-core machine: 62 s with 28 s of system time; on tmpfs 29 s
 * with 4 s). A container's /dev/shm is often 64 MB: then the temp folder.
 */
export async function scratchRoot(minBytes = 4 * 1024 ** 3) {
  try {
    const mounts = await readFile("/proc/mounts", "utf8");
    const shm = mounts
      .split("\n")
      .map((line) => line.split(" "))
      .find((fields) => fields[1] === "/dev/shm");
    if (shm?.[2] === "tmpfs" && !(shm[3] ?? "").split(",").includes("noexec")) {
      const fs = await statfs("/dev/shm");
      if (fs.bavail * fs.bsize >= minBytes) return "/dev/shm";
    }
  } catch {
    // No /proc (not Linux): the temp folder.
  }
  return tmpdir();
}

const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === "EPERM";
  }
};

/** Runs `fn` holding a lock file (created exclusively; one left by a process that died is taken over). */
async function withLock(path, fn) {
  for (;;) {
    try {
      await writeFile(path, String(process.pid), { flag: "wx" });
      break;
    } catch (e) {
      if (e.code !== "EEXIST") throw e;
      const holder = Number(await readFile(path, "utf8").catch(() => "0"));
      if (holder && !alive(holder)) await rm(path, { force: true });
      else await sleep(250);
    }
  }
  try {
    return await fn();
  } finally {
    await rm(path, { force: true });
  }
}

/**
 * `npm pack` of the repository at `root` into `dir`: the build (`prepack`) runs first, as publishing does. Packs of
 * one repository are serialised across processes (two test files packing at once would build dist/ at once).
 * With EONCE_PACK_CACHE naming a folder (one test run's, test/global-setup.ts; one CI run's, .ci/run), the first
 * pack goes there and the others take it: the same sources give the same tarball, whichever file or Node packs.
 */
export async function packPackage(root, dir, cache = process.env.EONCE_PACK_CACHE) {
  return withLock(join(root, "node_modules", ".eonce-pack.lock"), async () => {
    const index = cache ? join(cache, "packed.json") : undefined;
    if (index) {
      const done = await readFile(index, "utf8").then(JSON.parse, () => undefined);
      if (done && (await stat(done.tarball).catch(() => undefined))) return done;
    }
    const to = cache ?? dir;
    if (cache) await mkdir(cache, { recursive: true });
    const packed = await sh("npm", ["pack", "--json", "--pack-destination", to], { cwd: root });
    if (packed.code !== 0) throw new Error(`npm pack failed:\n${packed.stderr}`);
    const [info] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf("[")));
    const result = { tarball: join(to, info.filename), files: info.files.map((f) => f.path) };
    if (index) await writeFile(index, JSON.stringify(result));
    return result;
  });
}

const NPM_INSTALL = ["install", "--no-audit", "--no-fund", "--prefer-offline"];

/**
 * A new project `<dir>/app` (`"type": "module"`) with `files` written (path → text), `packages` installed as a user
 * would (`npm i -D --save-exact …`, while the package is packed), then the packed package itself.
 */
export async function packedProject({ root, dir, packages = [], files = {}, env = process.env }) {
  const project = join(dir, "app");
  await mkdir(project, { recursive: true });
  await writeFile(
    join(project, "package.json"),
    JSON.stringify({ name: "app", private: true, type: "module" }),
  );
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(project, path)), { recursive: true });
    await writeFile(join(project, path), text);
  }
  const tools =
    packages.length > 0
      ? sh("npm", [...NPM_INSTALL, "--save-dev", "--save-exact", ...packages], { cwd: project, env })
      : Promise.resolve({ code: 0, stdout: "", stderr: "" });
  const packed = await packPackage(root, dir);
  const installedTools = await tools;
  if (installedTools.code !== 0) throw new Error(`npm install failed:\n${installedTools.stderr}`);
  const install = await sh("npm", [...NPM_INSTALL, packed.tarball], { cwd: project, env });
  if (install.code !== 0) throw new Error(`npm install ${packed.tarball} failed:\n${install.stderr}`);
  return { project, ...packed };
}
