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
