/** A CloudFormation template's resources, read without trusting their shape: every property is `unknown`. */
export interface Resource {
  readonly id: string;
  readonly type: string;
  readonly properties: Record<string, unknown>;
  /** Tags as a map: CloudFormation's `[{Key, Value}]` list and SAM's mapping both end up here. */
  readonly tags: Readonly<Record<string, string>>;
  /** The resource's `Metadata` (where cdk-nag and cfn-lint suppressions live); `{}` when it has none. */
  readonly metadata: Json;
}

export type Json = Record<string, unknown>;

export function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export function asArray(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

export function asObject(v: unknown): Json {
  return isObject(v) ? v : {};
}

/** The resources of a template and the names its references may point at. */
export class TemplateModel {
  readonly resources: ReadonlyMap<string, Resource>;
  /** Parameters, conditions' inputs: references to these are known but their values are not. */
  readonly parameters: ReadonlySet<string>;
  /** The template's own top-level `Metadata`; `{}` when it has none. */
  readonly metadata: Json;

  constructor(resources: Iterable<Resource>, parameters: Iterable<string> = [], metadata: Json = {}) {
    this.resources = new Map([...resources].map((r) => [r.id, r]));
    this.parameters = new Set(parameters);
    this.metadata = metadata;
  }

  /** The template's JSON form (parsed by load.ts) as a model. */
  static fromTemplate(doc: Json): TemplateModel {
    const resources: Resource[] = [];
    for (const [id, raw] of Object.entries(asObject(doc.Resources))) {
      const r = asObject(raw);
      const properties = asObject(r.Properties);
      const metadata = asObject(r.Metadata);
      resources.push({ id, type: String(r.Type ?? ""), properties, tags: tagsOf(properties.Tags), metadata });
    }
    return new TemplateModel(resources, Object.keys(asObject(doc.Parameters)), asObject(doc.Metadata));
  }

  get(id: string): Resource | undefined {
    return this.resources.get(id);
  }

  ofType(...types: string[]): Resource[] {
    return [...this.resources.values()].filter((r) => types.includes(r.type));
  }
}

function tagsOf(tags: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (Array.isArray(tags)) {
    for (const t of tags) if (isObject(t) && typeof t.Key === "string") out[t.Key] = String(t.Value ?? "");
  } else if (isObject(tags)) {
    for (const [k, v] of Object.entries(tags)) out[k] = String(v);
  }
  return out;
}

/** A number property: CloudFormation accepts `30` and `"30"`; an intrinsic (a parameter) is not known here. */
export type NumberValue = { known: true; value: number } | { known: false; text: string };

export function numberProperty(value: unknown, fallback: number): NumberValue {
  if (value === undefined || value === null) return { known: true, value: fallback };
  const n = typeof value === "number" ? value : typeof value === "string" ? Number(value) : Number.NaN;
  if (typeof value === "string" && value.trim() === "") return { known: false, text: '""' };
  return Number.isFinite(n) ? { known: true, value: n } : { known: false, text: describeReference(value) };
}

/** `true`, `"true"` (any case) are true; an intrinsic is unknown (undefined). */
export function booleanProperty(value: unknown): boolean | undefined {
  if (value === undefined || value === null) return false;
  if (typeof value === "boolean") return value;
  if (typeof value === "string") return value.toLowerCase() === "true";
  return undefined;
}

/** A reference or intrinsic as the short form a template author wrote: `!Ref X`, `!GetAtt X.Arn`, `!Sub "…"`. */
export function describeReference(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (!isObject(value)) return JSON.stringify(value) ?? String(value);
  const [key] = Object.keys(value);
  if (key === undefined) return "{}";
  const arg = value[key];
  const short = key.replace(/^Fn::/, "");
  if (key === "Ref" && typeof arg === "string") return `!Ref ${arg}`;
  if (key === "Fn::GetAtt" && Array.isArray(arg)) return `!GetAtt ${arg.map(String).join(".")}`;
  const text = JSON.stringify(arg) ?? "";
  return `!${short} ${text.length > 80 ? `${text.slice(0, 79)}…` : text}`;
}
