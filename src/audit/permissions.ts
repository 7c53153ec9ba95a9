import { resolve } from "./resolve.js";
import { asArray, asObject, isObject, type Resource, type TemplateModel } from "./template.js";
import { TABLE_TYPES } from "./topology.js";

/** The item writes a lock needs: any one of them on a table lets a function take or free a lock in it. */
const ITEM_WRITES = [
  "dynamodb:putitem",
  "dynamodb:updateitem",
  "dynamodb:deleteitem",
  "dynamodb:batchwriteitem",
];

const ALL_TABLE_TYPES = [...TABLE_TYPES, "AWS::Serverless::SimpleTable"];

/**
 * The tables of the template whose items `fn` may write, as the policies of its role in this template allow:
 * the role's inline policies, AWS::IAM::Policy, ManagedPolicy and RolePolicy naming it, and the managed policies of
 * the template in its ManagedPolicyArns. A role outside the template grants nothing that can be seen here.
 */
export function tablesWrittenBy(model: TemplateModel, fn: Resource): Resource[] {
  const role = resolve(model, fn.properties.Role);
  if (role.kind !== "resource" || role.resource.type !== "AWS::IAM::Role") return [];
  const tables = new Map<string, Resource>();
  for (const doc of roleDocuments(model, role.resource))
    for (const t of writtenTables(model, doc)) tables.set(t.id, t);
  return [...tables.values()];
}

function roleDocuments(model: TemplateModel, role: Resource): unknown[] {
  const docs = asArray(role.properties.Policies).map((p) => asObject(p).PolicyDocument);
  for (const p of model.ofType("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy")) {
    if (asArray(p.properties.Roles).some((r) => namesRole(model, r, role)))
      docs.push(p.properties.PolicyDocument);
  }
  for (const p of model.ofType("AWS::IAM::RolePolicy")) {
    if (namesRole(model, p.properties.RoleName, role)) docs.push(p.properties.PolicyDocument);
  }
  for (const arn of asArray(role.properties.ManagedPolicyArns)) {
    const r = resolve(model, arn);
    if (r.kind === "resource" && r.resource.type === "AWS::IAM::ManagedPolicy")
      docs.push(r.resource.properties.PolicyDocument);
  }
  return docs;
}

/** `Roles` holds role names: `!Ref Role`, or the literal RoleName the role is given. */
function namesRole(model: TemplateModel, value: unknown, role: Resource): boolean {
  if (typeof value === "string") return value === role.properties.RoleName;
  const r = resolve(model, value);
  return r.kind === "resource" && r.resource.id === role.id;
}

function writtenTables(model: TemplateModel, document: unknown): Resource[] {
  const doc = typeof document === "string" ? parseJson(document) : asObject(document);
  const statement = doc.Statement;
  const statements = Array.isArray(statement) ? statement : [statement];
  return statements
    .map(asObject)
    .filter((s) => String(s.Effect).toLowerCase() === "allow" && listOf(s.Action).some(allowsItemWrite))
    .flatMap((s) => listOf(s.Resource).flatMap((r) => tablesNamed(model, r)));
}

/** A policy document given as a JSON string, as older templates write it. */
function parseJson(text: string): Record<string, unknown> {
  try {
    return asObject(JSON.parse(text));
  } catch {
    return {};
  }
}

function listOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : value === undefined ? [] : [value];
}

/** Whether an action pattern (`dynamodb:PutItem`, `dynamodb:Put*`, `dynamodb:*`, `*`) allows an item write. */
function allowsItemWrite(action: unknown): boolean {
  if (typeof action !== "string") return false;
  // IAM actions are case-insensitive; `*` and `?` are its only wildcards.
  const escaped = action.toLowerCase().replace(/[.+^${}()|[\]\\]/g, "\\$&");
  const pattern = new RegExp(`^${escaped.replace(/\*/g, ".*").replace(/\?/g, ".")}$`);
  return ITEM_WRITES.some((a) => pattern.test(a));
}

/** The tables a statement's Resource covers: `*` and `…:table/*` all of them; an index or stream ARN none. */
function tablesNamed(model: TemplateModel, value: unknown): Resource[] {
  if (typeof value === "string" && (value === "*" || /:table\/\*$/.test(value)))
    return model.ofType(...ALL_TABLE_TYPES);
  if (/\/(index|stream)\//.test(JSON.stringify(value) ?? "")) return [];
  const r = isObject(value) || typeof value === "string" ? resolve(model, value) : undefined;
  return r?.kind === "resource" && ALL_TABLE_TYPES.includes(r.resource.type) ? [r.resource] : [];
}
