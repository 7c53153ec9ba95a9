// The API reference (`npm run docs`): one module per public entry point, taken from package.json `exports` (each
// `./dist/x.d.ts` built from `src/x.ts`), so a new subpath is documented without editing this file. `npm run lint`
// runs the same configuration with `--emit none`: every exported name must have a doc comment.
import { existsSync, readFileSync } from "node:fs";

const pkg = JSON.parse(readFileSync(new URL("./package.json", import.meta.url), "utf8"));

/** Deprecated aliases of `./engines/*` (CHANGELOG.md): the same modules, documented once. */
const ALIASES = /^\.\/(stores\/|sinks\/dynamodb$)/;

/** The source file of each entry point, once; each names its module with a `@module` tag. */
const entryPoints = [
  ...new Set(
    Object.entries(pkg.exports)
      .filter(([subpath]) => !ALIASES.test(subpath))
      .map(([, target]) => {
        const source = target.types.replace(/^\.\/dist\//, "src/").replace(/\.d\.ts$/, ".ts");
        if (!existsSync(source)) throw new Error(`typedoc: no source ${source} for export ${target.types}`);
        return source;
      }),
  ),
];

/** @type {Partial<import("typedoc").TypeDocOptions>} */
export default {
  name: `${pkg.name} ${pkg.version}`,
  entryPoints,
  entryPointStrategy: "resolve",
  tsconfig: "tsconfig.build.json",
  out: "api-reference",
  readme: "none",
  // Type errors are `npm run typecheck`'s job; skipping them here halves the time.
  skipErrorChecking: true,
  excludePrivate: true,
  excludeProtected: true,
  excludeInternal: true,
  sort: ["source-order"],
  githubPages: false,
  // No source links: the repository has no remote to link to.
  disableSources: true,
  hideGenerator: true,
  // notExported is off: a few public signatures use types no entry point exports (listed by `--validation.notExported`).
  validation: { notExported: false, invalidLink: true, notDocumented: true },
  // Every exported name, not every member: a property or method may be self-explanatory.
  requiredToBeDocumented: ["Enum", "Variable", "Function", "Class", "Interface", "TypeAlias", "Namespace"],
  treatValidationWarningsAsErrors: true,
};
