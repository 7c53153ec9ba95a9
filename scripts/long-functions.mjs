// Lists the functions longer than a limit (default 60 lines) in the TypeScript files under the given folders and
// exits 1 when there is one: `node scripts/long-functions.mjs src [--max 60]`. Part of `npm run lint`.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";

const args = process.argv.slice(2);
const at = args.indexOf("--max");
const max = at === -1 ? 60 : Number(args.splice(at, 2)[1]);
const roots = args.length > 0 ? args : ["src"];

function* files(path) {
  if (statSync(path).isDirectory()) for (const name of readdirSync(path)) yield* files(join(path, name));
  else if (path.endsWith(".ts") && !path.endsWith(".d.ts")) yield path;
}

function nameOf(node) {
  if (node.name) return node.name.getText();
  const parent = node.parent;
  if (
    parent &&
    (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
  )
    return parent.name.getText();
  return "<anonymous>";
}

const long = [];
for (const root of roots) {
  for (const file of files(root)) {
    const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
    const visit = (node) => {
      if (ts.isFunctionLike(node) && node.body) {
        const first = source.getLineAndCharacterOfPosition(node.getStart()).line;
        const lines = source.getLineAndCharacterOfPosition(node.getEnd()).line - first + 1;
        if (lines > max) long.push(`${file}:${first + 1} ${nameOf(node)}: ${lines} lines`);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
}
for (const line of long) console.log(line);
console.log(`${long.length} function(s) over ${max} lines in ${roots.join(", ")}`);
process.exit(long.length > 0 ? 1 : 0);
