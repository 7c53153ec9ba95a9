/** Installs what the test suite needs from the machine where it can; returns one line per problem left. */
export function ensureTestPrerequisites(): string[];
/** The Chromium the report test launches (CHROMIUM_PATH, else Debian's /usr/bin/chromium). */
export function chromiumPath(): string;
