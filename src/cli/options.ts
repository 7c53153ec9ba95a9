import { type Command, InvalidArgumentError, Option } from "commander";
import { type Field, type FieldValue, Invalid, type Schema } from "../core/options.js";

/** How a schema field differs on the command line from what its key and field say. */
export interface FlagSpec {
  /** The flag's name without `--`; default: the key in kebab-case (`timeoutMs` → `timeout-ms`). */
  name?: string;
  /** The value's name in help; default: from the key and the field (see valueName). */
  value?: string;
  /**
   * Flag text (and what earlier occurrences gave, for a repeatable flag) → the value, for fields whose value is no
   * text (a list, an object). Default: the field's `fromText`.
   */
  parse?: (text: string, previous: unknown) => unknown;
}

export type FlagValues<S extends Schema> = { [K in keyof S]?: FieldValue<S[K]> };

/**
 * Adds a commander option for every field of `schema` that has a `doc`: the help line is the doc, the choices and
 * default are the field's, and each value is checked by the field as it is parsed (a bad one is a usage error,
 * exit 2). A field that takes no text and has no `parse` is a switch. Returns a function reading the values given
 * (defaults included) back under the schema's keys, for the command to hand to the options' resolver, which checks
 * them again, together.
 */
export function addSchemaOptions<S extends Schema>(
  command: Command,
  schema: S,
  flags: { [K in keyof S]?: FlagSpec } = {},
): (values: Record<string, unknown>) => FlagValues<S> {
  const attributes = new Map<string, string>();
  for (const [key, field] of Object.entries(schema)) {
    if (!field.doc) continue;
    const option = schemaOption(key, field, flags[key as keyof S] ?? {});
    attributes.set(key, option.attributeName());
    command.addOption(option);
  }
  return (values) => {
    const out: Record<string, unknown> = {};
    for (const [key, attribute] of attributes)
      if (values[attribute] !== undefined) out[key] = values[attribute];
    return out as FlagValues<S>;
  };
}

/**
 * The value's name in help, from the key and the field: `<ms>` for durations, `<p>` for shares (rates), `<s>` for
 * seconds, `<n>` for other numbers, else the key's last word (`stateTable` → `<table>`).
 */
// biome-ignore lint/suspicious/noExplicitAny: a schema's fields differ in type
function valueName(key: string, field: Field<any, boolean>): string {
  if (/Ms$/.test(key)) return "<ms>";
  if (/Rate$/.test(key)) return "<p>";
  if (/[a-z]S$/.test(key)) return "<s>";
  if (typeof field.fromText?.("1") === "number") return "<n>";
  return `<${(key.match(/[A-Z]?[a-z]+$/)?.[0] ?? key).toLowerCase()}>`;
}

/** `timeoutMs` → `timeout-ms`. */
export function kebabCase(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

// biome-ignore lint/suspicious/noExplicitAny: a schema's fields differ in type
function schemaOption(key: string, field: Field<any, boolean>, spec: FlagSpec): Option {
  const flag = `--${spec.name ?? kebabCase(key)}`;
  const fromText = spec.parse ?? field.fromText;
  if (!fromText) return new Option(flag, field.doc);
  const option = new Option(`${flag} ${spec.value ?? valueName(key, field)}`, field.doc);
  if (field.default !== undefined) option.default(field.default);
  // commander checks choices itself; the value is then the text.
  if (field.choices) return option.choices(field.choices);
  return option.argParser((text: string, previous: unknown) => {
    try {
      return field.check(fromText(text, previous));
    } catch (error) {
      if (error instanceof Invalid) throw new InvalidArgumentError(error.message);
      throw error;
    }
  });
}
