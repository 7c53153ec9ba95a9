import "vitest";

declare module "vitest" {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
    /** The run's PostgreSQL (test/kit/servers.ts); empty when no postgres suite runs. */
    postgresUrl: string;
    /** The run's Valkey or Redis (test/kit/servers.ts); empty when no valkey suite runs. */
    valkeyUrl: string;
    /** The run's EONCE_PACK_CACHE (scripts/packed-project.mjs): the packed package, made once for the run's files. */
    packCache: string;
  }
}
