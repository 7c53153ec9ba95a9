import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { SCENARIO_NAMES, type Scenario, type ScenarioName } from "./scenario.js";

/**
 * The scenarios live in `examples/` (next to `src/`), outside the compiled package: the demo runs from a
 * source checkout with a TypeScript loader (`npm run demo` uses tsx). Loaded by URL so that the build of
 * `src/` does not pull `examples/` in.
 */
export async function loadScenarios(names?: readonly string[]): Promise<Scenario[]> {
  const url = new URL("../../../examples/index.ts", import.meta.url);
  if (!existsSync(fileURLToPath(url))) {
    throw new Error(
      `the demo's pipelines are not here (${fileURLToPath(url)}): run it from a clone of the repository ` +
        "with `npm run demo`",
    );
  }
  let mod: { scenarios?: Scenario[] };
  try {
    mod = (await import(url.href)) as { scenarios?: Scenario[] };
  } catch (cause) {
    throw new Error("could not load examples/index.ts: run the demo with tsx (`npm run demo`)", { cause });
  }
  const all = mod.scenarios ?? [];
  if (!names || names.length === 0) return all;
  for (const n of names) {
    if (!SCENARIO_NAMES.includes(n as ScenarioName)) {
      throw new Error(`unknown scenario ${JSON.stringify(n)}: choose from ${SCENARIO_NAMES.join(", ")}`);
    }
  }
  return all.filter((s) => names.includes(s.name));
}
