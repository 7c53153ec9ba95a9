import { finding } from "../findings.js";
import { resolve } from "../resolve.js";
import { asArray, type TemplateModel } from "../template.js";
import { batchSourceKind, BATCH_SOURCE_LABEL as LABEL } from "../topology.js";
import { type Finding, unresolved } from "./common.js";

/** Rule batch-item-failures: every mapping of a batch source (SQS, Kinesis, DynamoDB streams) reports items. */
export function checkBatchItemFailures(model: TemplateModel): Finding[] {
  return model.ofType("AWS::Lambda::EventSourceMapping").flatMap((esm) => {
    const kind = batchSourceKind(model, esm);
    if (kind === "other") return [];
    if (kind === undefined) {
      const r = resolve(model, esm.properties.EventSourceArn);
      return r.kind === "resource" ? [] : [unresolved(esm, "EventSourceArn", r, "ReportBatchItemFailures")];
    }
    if (asArray(esm.properties.FunctionResponseTypes).includes("ReportBatchItemFailures")) return [];
    const message = `mapping ${esm.id} of a ${LABEL[kind]} has no ReportBatchItemFailures in FunctionResponseTypes`;
    return [finding("batch-item-failures", esm.id, message)];
  });
}
