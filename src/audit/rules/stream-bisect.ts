import { finding } from "../findings.js";
import { booleanProperty, describeReference, type TemplateModel } from "../template.js";
import { BATCH_SOURCE_LABEL, streamMappings } from "../topology.js";
import type { Finding } from "./common.js";

/** Rule stream-bisect: a stream mapping that does not split a failing batch (BisectBatchOnFunctionError). */
export function checkStreamBisect(model: TemplateModel): Finding[] {
  return streamMappings(model).flatMap(({ esm, kind }) => {
    const value = esm.properties.BisectBatchOnFunctionError;
    const bisect = booleanProperty(value);
    if (bisect === true) return [];
    if (bisect === undefined) {
      const message = `${esm.id}.BisectBatchOnFunctionError ${describeReference(value)} is not known before deployment: not checked`;
      return [finding("unresolved-reference", esm.id, message)];
    }
    const message = `mapping ${esm.id} of a ${BATCH_SOURCE_LABEL[kind]} does not set BisectBatchOnFunctionError: true`;
    return [finding("stream-bisect", esm.id, message)];
  });
}
