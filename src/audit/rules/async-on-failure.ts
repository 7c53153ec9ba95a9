import { finding } from "../findings.js";
import { asObject, type Resource, type TemplateModel } from "../template.js";
import { asyncInvokes, resolveFunction } from "../topology.js";
import { type Finding, unresolved } from "./common.js";

/**
 * Rule async-no-on-failure: a function invoked asynchronously (S3 notification, SNS subscription, EventBridge
 * target) with neither an EventInvokeConfig on-failure destination nor a DeadLetterConfig.
 */
export function checkAsyncOnFailure(model: TemplateModel): Finding[] {
  const invokers = new Map<string, { fn: Resource; from: string[] }>();
  const findings: Finding[] = [];
  for (const l of asyncInvokes(model)) {
    if (l.target.kind !== "resource") {
      findings.push(unresolved(l.from, l.at, l.target, "the function's on-failure destination"));
      continue;
    }
    const entry = invokers.get(l.target.resource.id) ?? { fn: l.target.resource, from: [] };
    entry.from.push(l.from.id);
    invokers.set(entry.fn.id, entry);
  }
  const covered = functionsWithOnFailure(model);
  for (const { fn, from } of invokers.values()) {
    if (covered.has(fn.id)) continue;
    const message = `function ${fn.id} is invoked asynchronously by ${[...new Set(from)].join(", ")} with no on-failure destination or DeadLetterConfig`;
    findings.push(finding("async-no-on-failure", fn.id, message));
  }
  return findings;
}

/** Functions with a DeadLetterConfig, an EventInvokeConfig's OnFailure, or SAM's DeadLetterQueue/EventInvokeConfig. */
function functionsWithOnFailure(model: TemplateModel): Set<string> {
  const ids = new Set<string>();
  for (const fn of model.ofType("AWS::Lambda::Function", "AWS::Serverless::Function")) {
    const p = fn.properties;
    const samOnFailure = asObject(asObject(asObject(p.EventInvokeConfig).DestinationConfig).OnFailure);
    if (asObject(p.DeadLetterConfig).TargetArn !== undefined || p.DeadLetterQueue !== undefined)
      ids.add(fn.id);
    if (samOnFailure.Destination !== undefined || samOnFailure.Type !== undefined) ids.add(fn.id);
  }
  for (const config of model.ofType("AWS::Lambda::EventInvokeConfig")) {
    const onFailure = asObject(asObject(config.properties.DestinationConfig).OnFailure);
    if (onFailure.Destination === undefined) continue;
    const fn = resolveFunction(model, config.properties.FunctionName);
    if (fn.kind === "resource") ids.add(fn.resource.id);
  }
  return ids;
}
