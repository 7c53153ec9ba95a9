#!/usr/bin/env node
// Ships the demo's reference pipelines: examples/**/*.ts → dist/examples/**/*.js, so that `eonce demo` runs from
// the installed package. The examples import the library as `../../src/<module>.js`; in dist/ the same module
// sits at `../../<module>.js` (dist/ is src/ compiled), so that prefix is rewritten. One file per module, no
// bundling: the examples and the library share one copy of every class.
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { transform } from "esbuild";

const root = fileURLToPath(new URL("..", import.meta.url));
const from = join(root, "examples");
const to = join(root, "dist/examples");

rmSync(to, { recursive: true, force: true });
const files = readdirSync(from, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts"));
for (const file of files) {
  const source = readFileSync(join(from, file), "utf8");
  const { code } = await transform(source, {
    loader: "ts",
    format: "esm",
    target: "es2022",
    sourcefile: file,
  });
  const rewritten = code.replace(/(["'])((?:\.\.\/)+)src\//g, "$1$2");
  const out = join(to, file.replace(/\.ts$/, ".js"));
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, rewritten);
}
process.stdout.write(`examples: ${files.length} modules → ${relative(root, to)}\n`);
