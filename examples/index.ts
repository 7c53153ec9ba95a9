import type { Scenario } from "../src/cli/demo/scenario.js";
import { imagesScenario } from "./images/scenario.js";
import { ordersScenario } from "./orders/scenario.js";
import { recordsScenario } from "./records/scenario.js";
import { totalsScenario } from "./totals/scenario.js";

/** The reference pipelines `eonce demo` runs, in order. */
export const scenarios: Scenario[] = [recordsScenario, imagesScenario, ordersScenario, totalsScenario];
