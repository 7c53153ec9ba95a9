import { s3Handler } from "../../../src/lambda/handlers.js";
import { TOY_URL_VARIABLE, toyDatabase } from "./engine.js";

/**
 * A guarded S3 handler on the toy engine (test/engines/toy/engine.ts), as `eonce run --state-store toy` runs it: the
 * toy database is the one the run hands over in TOY_URL (the engine's `env`), which the run's checks read back.
 */
const url = process.env[TOY_URL_VARIABLE];
if (!url) throw new Error(`${TOY_URL_VARIABLE} is not set: eonce run sets it from --state-url`);
const store = await toyDatabase(url);

export const handler = s3Handler(async (e) => (e.kind === "s3" ? e.key : undefined), {
  store,
  leaseMs: 2000,
});
