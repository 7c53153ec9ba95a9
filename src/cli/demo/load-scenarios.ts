import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { SCENARIO_NAMES, type Scenario, type ScenarioName } from "./scenario.js";

/**
 * The scenarios live in `examples/`. The package ships them compiled as `dist/examples/` (scripts/build-examples.mjs),
 * next to this module's `dist/local/demo/`; in a source checkout run with tsx (`npm run demo`) they are the
 * `examples/*.ts` files themselves. Loaded by URL, one scenario module each, so that the build of `src/` does not
 * pull `examples/` in and a scenario that is not asked for is not loaded (images needs sharp).
 */
export async function loadScenarios(names?: readonly string[]): Promise<Scenario[]> {
  for (const n of names ?? []) {
    if (!SCENARIO_NAMES.includes(n as ScenarioName)) {
      throw new Error(`unknown scenario ${JSON.stringify(n)}: choose from ${SCENARIO_NAMES.join(", ")}`);
    }
  }
  const wanted = SCENARIO_NAMES.filter((n) => !names || names.length === 0 || names.includes(n));
  const base = scenarioBase();
  const scenarios: Scenario[] = [];
  for (const name of wanted) {
    const url = new URL(`${name}/scenario${base.extension}`, base.url);
    let mod: Record<string, Scenario | undefined>;
    try {
      mod = (await import(url.href)) as Record<string, Scenario | undefined>;
    } catch (cause) {
      throw new Error(`could not load the ${name} scenario (${fileURLToPath(url)})`, { cause });
    }
    const scenario = mod[`${name}Scenario`];
    if (!scenario) throw new Error(`${fileURLToPath(url)} exports no ${name}Scenario`);
    scenarios.push(scenario);
  }
  return scenarios;
}

function scenarioBase(): { url: URL; extension: string } {
  const shipped = new URL("../../examples/", import.meta.url);
  if (existsSync(fileURLToPath(new URL("index.js", shipped)))) return { url: shipped, extension: ".js" };
  const checkout = new URL("../../../examples/", import.meta.url);
  if (existsSync(fileURLToPath(new URL("index.ts", checkout)))) return { url: checkout, extension: ".ts" };
  throw new Error(
    `the demo's pipelines are missing (neither ${fileURLToPath(shipped)} nor ${fileURLToPath(checkout)}): reinstall effectively-once`,
  );
}
