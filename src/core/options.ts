import { describeValue } from "./describe-value.js";
import { OptionsError } from "./errors.js";

/** Rejects unknown keys eagerly: a typo such as `leaseMS` must not silently fall back to a default. */
export function rejectUnknownKeys(what: string, options: object, allowed: readonly string[]): void {
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) {
      throw new OptionsError(
        `${what}: unknown option ${describeValue(key)} (allowed: ${allowed.join(", ")})`,
      );
    }
  }
}

export function requirePositiveInteger(what: string, name: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0) {
    throw new OptionsError(`${what}: ${name} must be a positive integer, got ${describeValue(value)}`);
  }
  return value;
}

export function requireOneOf<T extends string>(
  what: string,
  name: string,
  value: unknown,
  allowed: readonly T[],
): T {
  if (typeof value !== "string" || !allowed.includes(value as T)) {
    throw new OptionsError(
      `${what}: ${name} must be one of ${allowed.join(", ")}, got ${describeValue(value)}`,
    );
  }
  return value as T;
}
