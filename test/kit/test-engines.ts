import { registerToyEngine } from "../engines/toy/engine.js";

/**
 * The engines only the test suite defines, registered with src/engines/registry.ts `registerEngine`: imported by
 * vitest.config.ts (which project runs their suites) and the test kit (test/kit/stores.ts), so the store suites and
 * `EONCE_STORES` take them as they take the package's.
 */
registerToyEngine();
