/**
 * Installs what the test suite needs from the machine where it can; returns one line per problem left. `valkey`
 * (default true): whether the run has Valkey suites, which need a valkey-server or redis-server binary.
 */
export function ensureTestPrerequisites(options?: { valkey?: boolean }): string[];
/** The Chromium the report test launches (CHROMIUM_PATH, else Debian's /usr/bin/chromium). */
export function chromiumPath(): string;
