// Lists the import cycles among the TypeScript files under the given folders and exits 1 when there is one:
// `node scripts/import-cycles.mjs src`. Part of `npm run lint`.
//
// An edge is a relative specifier of `import … from`, `export … from`, a bare `import "…"` or an `import("…")` type.
// Type-only imports count: a type cycle is the same tangle of concepts as a value cycle (a hub defining a type its
// spokes import back), and it turns into a value cycle as soon as one side imports a value. Runtime `import()` calls
// do not count: they load when called, after both modules are initialised. A file importing itself is no cycle.
//
// Biome's `noImportCycles` rule ignores `import type` by default, reports each import with one path, and is a
// warning that does not fail `biome check`; this script prints each cycle once, as a path of files.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

const roots = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ["src"];
const MAX_PER_GROUP = 50;

function* files(path) {
  if (statSync(path).isDirectory()) for (const name of readdirSync(path)) yield* files(join(path, name));
  else if (path.endsWith(".ts") && !path.endsWith(".d.ts")) yield resolve(path);
}

function specifiers(file) {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const found = [];
  const visit = (node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      if (ts.isStringLiteral(node.moduleSpecifier)) found.push(node.moduleSpecifier.text);
    } else if (ts.isImportTypeNode(node)) {
      const literal = node.argument.literal;
      if (literal && ts.isStringLiteral(literal)) found.push(literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found.filter((specifier) => specifier.startsWith("."));
}

// NodeNext specifiers name the emitted `.js`; the source is the `.ts` beside it (or an index in a folder).
function target(from, specifier) {
  const base = resolve(dirname(from), specifier);
  const candidates = [base.replace(/\.js$/, ".ts"), `${base}.ts`, join(base, "index.ts")];
  return candidates.find((path) => path.endsWith(".ts") && existsSync(path) && statSync(path).isFile());
}

const graph = new Map();
for (const root of roots) {
  for (const file of files(root)) {
    const edges = specifiers(file)
      .map((specifier) => target(file, specifier))
      .filter((path) => path !== undefined && path !== file);
    graph.set(file, [...new Set(edges)].sort());
  }
}
for (const edges of graph.values()) for (const to of edges) if (!graph.has(to)) graph.set(to, []);

// Tarjan's strongly connected components: every cycle lies inside one.
function components() {
  let index = 0;
  const indexOf = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const groups = [];
  const connect = (node) => {
    indexOf.set(node, index);
    low.set(node, index);
    index += 1;
    stack.push(node);
    onStack.add(node);
    for (const to of graph.get(node)) {
      if (!indexOf.has(to)) {
        connect(to);
        low.set(node, Math.min(low.get(node), low.get(to)));
      } else if (onStack.has(to)) low.set(node, Math.min(low.get(node), indexOf.get(to)));
    }
    if (low.get(node) !== indexOf.get(node)) return;
    const group = [];
    let member;
    do {
      member = stack.pop();
      onStack.delete(member);
      group.push(member);
    } while (member !== node);
    if (group.length > 1) groups.push(group.sort());
  };
  for (const node of [...graph.keys()].sort()) if (!indexOf.has(node)) connect(node);
  return groups;
}

// The elementary cycles of one component, each once: it starts at its smallest file (in the component's order).
function cycles(group) {
  const rank = new Map(group.map((node, i) => [node, i]));
  const found = [];
  for (const start of group) {
    const path = [start];
    const onPath = new Set(path);
    const walk = (node) => {
      for (const to of graph.get(node)) {
        if (found.length >= MAX_PER_GROUP) return;
        if (!rank.has(to) || rank.get(to) < rank.get(start)) continue;
        if (to === start) found.push([...path, start]);
        else if (!onPath.has(to)) {
          path.push(to);
          onPath.add(to);
          walk(to);
          onPath.delete(to);
          path.pop();
        }
      }
    };
    walk(start);
  }
  return found;
}

const show = (path) => relative(process.cwd(), path);
const groups = components();
let count = 0;
for (const group of groups) {
  const found = cycles(group);
  count += found.length;
  console.log(`${group.length} file(s) import each other: ${group.map(show).join(", ")}`);
  for (const cycle of found) console.log(`  ${cycle.map(show).join(" -> ")}`);
  if (found.length >= MAX_PER_GROUP) console.log(`  … (first ${MAX_PER_GROUP} cycles shown)`);
}
console.log(`${count} import cycle(s) in ${roots.join(", ")}`);
process.exit(groups.length > 0 ? 1 : 0);
