import { describeValue } from "./describe-value.js";
import { OptionsError } from "./errors.js";

/**
 * One declarative options mechanism: every options type (the guard's, the Lambda wrappers', the CDK construct's,
 * the local runtime's) has a schema of fields, validated eagerly by `resolveOptions` with one error type
 * (`OptionsError`, naming the option), and read by the CLI to derive its flags (`src/cli/options.ts`). The schema
 * is declared once: either the options type is inferred from it (`InputOf`, the guard's and the wrappers'; each
 * field's doc comment becomes the option's), or it is checked against a type declared beside it (`schemaFor<T>()`
 * rejects a missing or an extra key). Rules that relate several options (heartbeatMs below leaseMs) stay with
 * their owner, after the fields resolve.
 */

/**
 * A field: how to check one option, its default, and what the CLI flag says. `D`: resolves to a value always;
 * `Q`: the option must be given (`required`).
 */
export interface Field<T, D extends boolean = boolean, Q extends boolean = boolean> {
  /** Checks a present value; returns it (or a normalised copy) or throws `Invalid` with what is expected. */
  readonly check: (value: unknown) => T;
  readonly default: D extends true ? T | undefined : undefined;
  readonly required: Q;
  /** One line for CLI help; fields without it are not offered as flags. */
  readonly doc: string | undefined;
  /** How a CLI flag's text becomes the value; absent for fields that take no text (functions, objects). */
  readonly fromText: ((text: string) => unknown) | undefined;
  /** For CLI help: the allowed values. */
  readonly choices: readonly string[] | undefined;
}

/** Thrown by a field's check; `resolveOptions` turns it into an OptionsError naming the option. */
export class Invalid extends Error {}

interface FieldSpec<T> {
  doc?: string;
  default?: T;
  required?: boolean;
}

type Spec<T, D> = FieldSpec<T> & { default?: D };
type Present<S> = S extends { default: unknown } ? true : S extends { required: true } ? true : false;

function field<T, S extends FieldSpec<T>>(
  spec: S,
  check: (value: unknown) => T,
  fromText?: (text: string) => unknown,
  choices?: readonly string[],
): Field<T, Present<S>> {
  return {
    check,
    default: spec.default as Field<T, Present<S>>["default"],
    required: spec.required === true,
    doc: spec.doc,
    fromText,
    choices,
  };
}

function describeGot(value: unknown): string {
  return `got ${describeValue(value)}`;
}

export function integer<const S extends Spec<number, number> & { min?: number; max?: number }>(
  spec: S = {} as S,
): Field<number, Present<S>> {
  const min = spec.min ?? Number.MIN_SAFE_INTEGER;
  const max = spec.max ?? Number.MAX_SAFE_INTEGER;
  const base =
    min === 1 ? "a positive integer" : min === 0 ? "a non-negative integer" : `an integer of at least ${min}`;
  const range = spec.max === undefined ? base : `an integer from ${min} to ${max}`;
  return field(
    spec,
    (value) => {
      if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) {
        throw new Invalid(`must be ${range}, ${describeGot(value)}`);
      }
      return value;
    },
    (text) => (/^-?\d+$/.test(text.trim()) ? Number(text) : text),
  );
}

export function boolean<const S extends Spec<boolean, boolean>>(
  spec: S = {} as S,
): Field<boolean, Present<S>> {
  return field(spec, (value) => {
    if (typeof value !== "boolean") throw new Invalid(`must be a boolean, ${describeGot(value)}`);
    return value;
  });
}

export function string<const S extends Spec<string, string> & { pattern?: RegExp; expected?: string }>(
  spec: S = {} as S,
): Field<string, Present<S>> {
  return field(
    spec,
    (value) => {
      if (typeof value !== "string" || value.length === 0) {
        throw new Invalid(`must be a non-empty string, ${describeGot(value)}`);
      }
      if (spec.pattern && !spec.pattern.test(value)) {
        throw new Invalid(`must be ${spec.expected ?? `like ${spec.pattern}`}, ${describeGot(value)}`);
      }
      return value;
    },
    (text) => text,
  );
}

export function oneOf<const V extends string, const S extends Spec<V, V>>(
  values: readonly V[],
  spec: S = {} as S,
): Field<V, Present<S>> {
  return field(
    spec,
    (value) => {
      if (typeof value !== "string" || !values.includes(value as V)) {
        throw new Invalid(`must be one of ${values.join(", ")}, ${describeGot(value)}`);
      }
      return value as V;
    },
    (text) => text,
    values,
  );
}

export function func<T extends (...args: never[]) => unknown, const S extends Spec<T, T> = Spec<T, T>>(
  spec: S & { expected?: string } = {} as S,
): Field<T, Present<S>> {
  return field(spec, (value) => {
    if (typeof value !== "function") {
      throw new Invalid(`must be ${spec.expected ?? "a function"}, ${describeGot(value)}`);
    }
    return value as T;
  });
}

/** Anything that passes `is` (an SDK client, a CDK construct, a list): `expected` says what in the error. */
export function custom<T, const S extends Spec<T, T> = Spec<T, T>>(
  expected: string,
  is: (value: unknown) => boolean,
  spec: S = {} as S,
): Field<T, Present<S>> {
  return field(spec, (value) => {
    if (!is(value)) throw new Invalid(`must be ${expected}, ${describeGot(value)}`);
    return value as T;
  });
}

/** The same field, required: resolving without it throws; its resolved type has no undefined. */
export function required<T>(f: Field<T, boolean>): Field<T, true, true> {
  return { ...f, required: true } as Field<T, true, true>;
}

/** A nested options object validated by its own resolver (which throws OptionsError itself). */
export function nested<T, R>(resolve: (value: T) => R, spec: FieldSpec<R> = {}): Field<R, false> {
  return field(spec as FieldSpec<R> & { default?: undefined }, (value) => {
    if (typeof value !== "object" || value === null)
      throw new Invalid(`must be an object, ${describeGot(value)}`);
    return resolve(value as T);
  }) as Field<R, false>;
}

// biome-ignore lint/suspicious/noExplicitAny: a schema's fields differ in type; each is checked by schemaFor
export type Schema = Readonly<Record<string, Field<any, boolean>>>;

/** What a field resolves to: its type, or undefined when it is optional without a default. */
export type FieldValue<F> = F extends Field<infer T, infer D> ? (D extends true ? T : T | undefined) : never;
export type Resolved<S extends Schema> = { -readonly [K in keyof S]: FieldValue<S[K]> };

/** What a field takes when given. */
export type FieldInput<F> = F extends Field<infer T, boolean, boolean> ? T : never;
/** Every option of a schema, typed by its field (homomorphic: each keeps its field's doc comment). */
type Inputs<S extends Schema> = { -readonly [K in keyof S]: FieldInput<S[K]> };
type RequiredKeys<S extends Schema> = {
  [K in keyof S]: S[K] extends Field<unknown, boolean, true> ? K : never;
}[keyof S];
/**
 * The options type a schema validates, inferred from it: required fields' keys are required, the others optional;
 * each option's doc comment is its field's. Extend it with an interface to name it (`interface GuardOptions
 * extends InputOf<typeof GUARD_FIELDS> {}`).
 */
export type InputOf<S extends Schema> = Pick<Inputs<S>, RequiredKeys<S>> &
  Partial<Pick<Inputs<S>, Exclude<keyof S, RequiredKeys<S>>>>;

/**
 * Ties a schema to an options type: a missing or an extra key, or a field of the wrong type, is a compile error.
 * Use: `const schema = schemaFor<MemoryStoreOptions>()({ maxResultBytes: integer({ min: 1 }) })`.
 */
export function schemaFor<T extends object>() {
  return <S extends { readonly [K in keyof T]-?: Field<FieldType<T[K]>, boolean> }>(
    schema: S & Record<Exclude<keyof S, keyof T>, never>,
  ): S => schema;
}
type FieldType<V> = Exclude<V, undefined>;

/** Validates `input` against `schema`: unknown keys, missing required keys and bad values throw OptionsError. */
export function resolveOptions<S extends Schema>(what: string, schema: S, input: unknown): Resolved<S> {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    throw new OptionsError(`${what}: options are required (an object), ${describeGot(input)}`);
  }
  rejectUnknownKeys(what, input, Object.keys(schema));
  const out: Record<string, unknown> = {};
  for (const [name, f] of Object.entries(schema)) {
    const value = (input as Record<string, unknown>)[name];
    if (value === undefined) {
      if (f.required) throw new OptionsError(`${what}: ${name} is required`);
      out[name] = f.default;
      continue;
    }
    out[name] = checkField(what, name, f, value);
  }
  return out as Resolved<S>;
}

/** The part of a schema whose keys are listed (to share fields between options types). */
export function pickFields<S extends Schema, K extends keyof S>(schema: S, keys: readonly K[]): Pick<S, K> {
  return Object.fromEntries(keys.map((k) => [k, schema[k]])) as Pick<S, K>;
}

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

/** Throws an OptionsError for a rule that relates several options. */
export function optionsRule(what: string, holds: boolean, message: string): void {
  if (!holds) throw new OptionsError(`${what}: ${message}`);
}

/** Checks one value against a field, with the same error as resolveOptions. */
export function checkField<T>(what: string, name: string, f: Field<T, boolean>, value: unknown): T {
  try {
    return f.check(value);
  } catch (error) {
    if (error instanceof Invalid)
      throw new OptionsError(`${what}: ${name} ${error.message}`, { cause: error });
    throw error;
  }
}
