import { inject } from "vitest";

/**
 * The integration project's setup file: the run's PostgreSQL and Valkey (test/global-setup.ts) as
 * `EONCE_POSTGRES_URL` and `EONCE_VALKEY_URL` in each test file's process, where the suites' helpers, the engines'
 * simulator backends and every CLI a test spawns read them.
 */
const postgresUrl = inject("postgresUrl");
const valkeyUrl = inject("valkeyUrl");
if (postgresUrl) process.env.EONCE_POSTGRES_URL = postgresUrl;
if (valkeyUrl) process.env.EONCE_VALKEY_URL = valkeyUrl;
