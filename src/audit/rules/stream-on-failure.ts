import { finding } from "../findings.js";
import { asObject, type TemplateModel } from "../template.js";
import { BATCH_SOURCE_LABEL, streamMappings } from "../topology.js";
import type { Finding } from "./common.js";

/** Rule stream-no-on-failure: a stream mapping without DestinationConfig.OnFailure.Destination. */
export function checkStreamOnFailure(model: TemplateModel): Finding[] {
  return streamMappings(model).flatMap(({ esm, kind }) => {
    const onFailure = asObject(asObject(esm.properties.DestinationConfig).OnFailure);
    if (onFailure.Destination !== undefined) return [];
    const message = `mapping ${esm.id} of a ${BATCH_SOURCE_LABEL[kind]} has no DestinationConfig.OnFailure: skipped records leave no trace`;
    return [finding("stream-no-on-failure", esm.id, message)];
  });
}
