import { inject } from "vitest";

/**
 * The integration project's setup file: the run's PostgreSQL and Valkey (test/global-setup.ts) as
 * `EONCE_POSTGRES_URL` and `EONCE_VALKEY_URL` in each test file's process, where the suites' helpers, the engines'
 * simulator backends and every CLI a test spawns read them; and the run's pack cache as `EONCE_PACK_CACHE`.
 */
const postgresUrl = inject("postgresUrl");
const valkeyUrl = inject("valkeyUrl");
if (postgresUrl) process.env.EONCE_POSTGRES_URL = postgresUrl;
if (valkeyUrl) process.env.EONCE_VALKEY_URL = valkeyUrl;
// The packed package, made once for the run (test/consumer.test.ts and test/docs/readme-starts.test.ts both install it).
const packCache = inject("packCache");
if (packCache) process.env.EONCE_PACK_CACHE ??= packCache;
