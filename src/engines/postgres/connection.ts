/**
 * The PostgreSQL connection string of the commands that read PostgreSQL (`eonce state`, `eonce audit table`): the
 * flag, else `DATABASE_URL` (the variable the README's handlers read), else none, and node-postgres reads libpq's
 * PG* variables (PGHOST, PGUSER, …) for every part the string does not give.
 */
export function postgresConnectionString(
  o: { databaseUrl?: string | undefined },
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  return o.databaseUrl ?? (env.DATABASE_URL || undefined);
}

/**
 * A pool for an operator's command on the connection `o` names (`postgresConnectionString`). node-postgres is an
 * optional peer, loaded only now: without it, `missingPeer` says what to install, worded for the command.
 */
export async function openPostgresPool(
  o: { databaseUrl?: string | undefined },
  options: { max: number; missingPeer(cause: unknown): Error },
): Promise<import("pg").Pool> {
  let Pool: typeof import("pg").Pool;
  try {
    ({ Pool } = (await import("pg")).default);
  } catch (cause) {
    throw options.missingPeer(cause);
  }
  const connectionString = postgresConnectionString(o);
  return new Pool({ ...(connectionString ? { connectionString } : {}), max: options.max });
}
