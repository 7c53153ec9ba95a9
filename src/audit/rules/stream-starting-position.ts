import { finding } from "../findings.js";
import type { TemplateModel } from "../template.js";
import { BATCH_SOURCE_LABEL, streamMappings } from "../topology.js";
import type { Finding } from "./common.js";

/** Rule stream-starting-latest: a stream mapping that starts at LATEST (a warning: it may be meant). */
export function checkStreamStartingPosition(model: TemplateModel): Finding[] {
  return streamMappings(model).flatMap(({ esm, kind }) => {
    const position = esm.properties.StartingPosition;
    if (typeof position !== "string" || position.toUpperCase() !== "LATEST") return [];
    const message = `mapping ${esm.id} of a ${BATCH_SOURCE_LABEL[kind]} starts at LATEST: records written before it starts are never read`;
    return [finding("stream-starting-latest", esm.id, message)];
  });
}
