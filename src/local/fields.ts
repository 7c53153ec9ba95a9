import { custom, type Field } from "../core/options.js";

/**
 * A number option that need not be an integer (a share, a duration in ms), which core's fields do not offer:
 * checked by `is`, read from flag text as a number.
 */
export function numberField<const S extends { default?: number; doc?: string }>(
  expected: string,
  is: (n: number) => boolean,
  spec: S,
): Field<number, S extends { default: number } ? true : false> {
  const f = custom<number>(expected, (v) => typeof v === "number" && is(v), spec);
  return { ...f, fromText: (text: string) => (text.trim() === "" ? text : Number(text)) } as Field<
    number,
    S extends { default: number } ? true : false
  >;
}

/** A share in [0, 1]. */
export const isShare = (n: number): boolean => n >= 0 && n <= 1;
/** A duration in ms: finite, not negative. */
export const isDuration = (n: number): boolean => Number.isFinite(n) && n >= 0;
