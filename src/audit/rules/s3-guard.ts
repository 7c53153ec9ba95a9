import { finding } from "../findings.js";
import { tablesWrittenBy } from "../permissions.js";
import { asObject, booleanProperty, type Resource, type TemplateModel } from "../template.js";
import {
  FUNCTION_TYPES,
  functionsReached,
  isS3Rule,
  type Link,
  QUEUE,
  resolveFunction,
  ruleTargets,
  s3Notifications,
} from "../topology.js";
import type { Finding } from "./common.js";
import { functionsWithStateElsewhere, guardTables, isGuardTable, ROLE_TAG } from "./guard-table.js";

/** One way S3 events leave a resource of the stack, and how a finding names where they go. */
interface S3Route {
  link: Link;
  label: string;
}

/** A table that looks like a hand-made lock: which functions write it, on S3 events from which resources. */
interface LockUse {
  table: Resource;
  writers: Set<string>;
  sources: Set<string>;
}

/**
 * Rules s3-no-guard-table and hand-made-lock-table: S3 events reach Lambda, SQS or SNS and the stack has no guard
 * (no guard table, no function that says where its state is instead). Where every function a route runs writes
 * a table of the stack that is no guard table, that table is reported as a possible hand-made lock instead: it is
 * the stack's attempt at dropping duplicates, and what it lacks is more useful to say than "nothing".
 */
export function checkS3GuardTable(model: TemplateModel): Finding[] {
  if (guardTables(model).length > 0 || functionsWithStateElsewhere(model).length > 0) return [];
  const locks = new Map<string, LockUse>();
  const unguarded = new Map<string, string[]>();
  for (const { link, label } of s3Routes(model)) {
    const uses = lockWrites(model, link);
    if (!uses) {
      unguarded.set(link.from.id, [...(unguarded.get(link.from.id) ?? []), label]);
      continue;
    }
    for (const { table, fn } of uses) {
      const use = locks.get(table.id) ?? { table, writers: new Set(), sources: new Set() };
      use.writers.add(fn.id);
      use.sources.add(link.from.id);
      locks.set(table.id, use);
    }
  }
  return [
    ...[...locks.values()].map(lockFinding),
    ...[...unguarded].map(([id, targets]) =>
      finding(
        "s3-no-guard-table",
        id,
        `${id} sends S3 events to ${[...new Set(targets)].join(", ")} and the template has no guard state table`,
      ),
    ),
  ];
}

function s3Routes(model: TemplateModel): S3Route[] {
  const routes = s3Notifications(model).map((link) => ({ link, label: describeTarget(link) }));
  for (const t of ruleTargets(model)) {
    if (!isS3Rule(t.from)) continue;
    const kind = targetKind(model, t);
    if (kind) routes.push({ link: t, label: `${kind} ${describeTarget(t)}` });
  }
  return routes;
}

/**
 * The possible lock tables behind a route, when every function it runs writes one (a function that writes none
 * runs the events unguarded, so the route stays s3-no-guard-table); undefined otherwise.
 */
function lockWrites(model: TemplateModel, link: Link): { table: Resource; fn: Resource }[] | undefined {
  const functions = functionsReached(model, link.value);
  const uses = functions.map((fn) => lockCandidates(model, fn).map((table) => ({ table, fn })));
  return uses.length > 0 && uses.every((u) => u.length > 0) ? uses.flat() : undefined;
}

/** Tables the function writes that are no guard table and carry no eonce:role (which says what a table is). */
function lockCandidates(model: TemplateModel, fn: Resource): Resource[] {
  return tablesWrittenBy(model, fn).filter((t) => t.tags[ROLE_TAG] === undefined && !isGuardTable(t));
}

function lockFinding({ table, writers, sources }: LockUse): Finding {
  const ttl = asObject(table.properties.TimeToLiveSpecification);
  const ttlOn = booleanProperty(ttl.Enabled) !== false && ttl.AttributeName !== undefined;
  // TTL is the one half a template can show; a lease and a fencing token live in the handler's code.
  const crash = ttlOn
    ? `TTL on ${String(ttl.AttributeName)} frees a crashed holder's lock only when DynamoDB deletes the expired item, which can take days`
    : "without TimeToLiveSpecification a crashed holder keeps the lock forever";
  const message = `table ${table.id}, written by ${[...writers].join(", ")} on S3 events from ${[...sources].join(", ")}, looks like a hand-made lock: ${crash}; without a lease and fencing (not visible in a template) a slow holder can overwrite newer work`;
  return finding("hand-made-lock-table", table.id, message);
}

function describeTarget(l: Link): string {
  return l.target.kind === "resource" ? l.target.resource.id : l.target.text;
}

/** A rule target that runs code per event: a function or a queue (resolved, or by its ARN's service). */
function targetKind(model: TemplateModel, l: Link): "function" | "queue" | undefined {
  const fn = resolveFunction(model, l.value);
  if (fn.kind === "resource") {
    if (FUNCTION_TYPES.includes(fn.resource.type)) return "function";
    return fn.resource.type === QUEUE ? "queue" : undefined;
  }
  if (/:function:/.test(fn.text)) return "function";
  return /:sqs:/.test(fn.text) ? "queue" : undefined;
}
