import type { Pool } from "pg";

/**
 * One schema per run, shared by its histories (each names its subjects under its own namespace), dropped after
 * (sim-schema.ts). A history's cold start makes a table of its own there, dropped when its migrations are done.
 */
export interface PostgresChaosEnv {
  pool: Pool;
  schema: string;
  /** A pool of its own on the same server (a cold start's, a long reader's): they must not starve `pool`. */
  newPool(max: number): Pool;
  close(): Promise<void>;
}
