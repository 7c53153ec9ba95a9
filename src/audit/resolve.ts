import {
  asArray,
  asObject,
  describeReference,
  isObject,
  type Json,
  type Resource,
  type TemplateModel,
} from "./template.js";

/**
 * What a reference (an ARN, a name, `!Ref`, `!GetAtt`, `!Sub`, `!Join`) points at:
 * - `resource`: a resource of this template;
 * - `outside`: a literal name or ARN that names no resource here (another stack, the console);
 * - `unresolved`: depends on a parameter, an import or a condition: not known before deployment.
 */
export type Resolved =
  | { kind: "resource"; resource: Resource }
  | { kind: "outside"; text: string }
  | { kind: "unresolved"; text: string };

/** One piece of a string being built: literal text, a reference to a resource or parameter, or anything else. */
type Piece = { lit: string } | { ref: string; attr?: string } | { unknown: string };

/** Pseudo parameters: their values vary by deployment but never pick another resource. */
const PSEUDO = /^AWS::/;

function pieces(value: unknown): Piece[] {
  if (typeof value === "string") return [{ lit: value }];
  if (typeof value === "number") return [{ lit: String(value) }];
  if (!isObject(value)) return [{ unknown: describeReference(value) }];
  if (typeof value.Ref === "string") return [{ ref: value.Ref }];
  const getAtt = value["Fn::GetAtt"];
  if (getAtt !== undefined) return getAttPiece(getAtt) ?? [{ unknown: describeReference(value) }];
  if (value["Fn::Sub"] !== undefined)
    return subPieces(value["Fn::Sub"]) ?? [{ unknown: describeReference(value) }];
  const join = value["Fn::Join"];
  if (Array.isArray(join) && typeof join[0] === "string" && Array.isArray(join[1])) {
    return join[1].flatMap((part, i) =>
      i === 0 ? pieces(part) : [{ lit: join[0] as string }, ...pieces(part)],
    );
  }
  return [{ unknown: describeReference(value) }];
}

function getAttPiece(arg: unknown): Piece[] | undefined {
  const parts = typeof arg === "string" ? arg.split(".") : asArray(arg);
  const [id, ...attr] = parts;
  if (typeof id !== "string") return undefined;
  return [{ ref: id, attr: attr.map(String).join(".") }];
}

/** `!Sub "arn:…:${Queue.QueueName}"` and `!Sub ["…${Name}", {Name: !Ref Queue}]`; `${!Literal}` is text. */
function subPieces(arg: unknown): Piece[] | undefined {
  const [text, vars] = typeof arg === "string" ? [arg, {}] : [asArray(arg)[0], asObject(asArray(arg)[1])];
  if (typeof text !== "string") return undefined;
  const out: Piece[] = [];
  let last = 0;
  for (const m of text.matchAll(/\$\{([^}]*)\}/g)) {
    out.push({ lit: text.slice(last, m.index) });
    last = m.index + m[0].length;
    const name = m[1] ?? "";
    if (name.startsWith("!")) out.push({ lit: `\${${name.slice(1)}}` });
    else if (name in vars) out.push(...pieces((vars as Json)[name]));
    else {
      const dot = name.indexOf(".");
      out.push(dot === -1 ? { ref: name } : { ref: name.slice(0, dot), attr: name.slice(dot + 1) });
    }
  }
  out.push({ lit: text.slice(last) });
  return out;
}

/** What `value` points at; see {@link Resolved}. */
export function resolve(model: TemplateModel, value: unknown): Resolved {
  if (value === undefined || value === null) return { kind: "unresolved", text: "(missing)" };
  const ps = pieces(value);
  const ids = new Set<string>();
  for (const p of ps) if ("ref" in p && model.get(p.ref)) ids.add(p.ref);
  const text = describeReference(value);
  if (ids.size === 1) return { kind: "resource", resource: model.get([...ids][0]!)! };
  if (ids.size > 1) return { kind: "unresolved", text: `${text} (names several resources)` };
  const unknown = ps.some((p) => "unknown" in p || ("ref" in p && !PSEUDO.test(p.ref)));
  if (unknown) return { kind: "unresolved", text };
  const literal = ps.map((p) => ("lit" in p ? p.lit : "*")).join("");
  const named = byName(model, literal);
  return named ? { kind: "resource", resource: named } : { kind: "outside", text };
}

/** The literal name property of each named resource type, and how an ARN or URL ends with that name. */
const NAME_PROPERTY: Record<string, string> = {
  "AWS::SQS::Queue": "QueueName",
  "AWS::Lambda::Function": "FunctionName",
  "AWS::Serverless::Function": "FunctionName",
  "AWS::DynamoDB::Table": "TableName",
  "AWS::SNS::Topic": "TopicName",
  "AWS::S3::Bucket": "BucketName",
  "AWS::Kinesis::Stream": "Name",
};

/** The name an ARN, queue URL or plain name ends with (`…:function:name:alias` → `name`). */
export function nameInArn(text: string): string {
  const fn = /:function:([^:]+)/.exec(text);
  if (fn) return fn[1]!;
  const table = /:table\/([^/]+)/.exec(text);
  if (table) return table[1]!;
  return text.split(/[:/]/).at(-1) ?? text;
}

function byName(model: TemplateModel, literal: string): Resource | undefined {
  const name = nameInArn(literal);
  for (const r of model.resources.values()) {
    const prop = NAME_PROPERTY[r.type];
    if (prop && r.properties[prop] === name) return r;
  }
  return undefined;
}

/** The attribute a reference reads (`StreamArn` of `!GetAtt Table.StreamArn`), when it is one reference. */
export function attributeOf(value: unknown): string | undefined {
  const ps = pieces(value);
  const refs = ps.filter((p): p is { ref: string; attr?: string } => "ref" in p && !PSEUDO.test(p.ref));
  return refs.length === 1 ? refs[0]!.attr : undefined;
}
