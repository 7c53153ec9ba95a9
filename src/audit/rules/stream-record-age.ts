import { finding } from "../findings.js";
import { numberProperty, type TemplateModel } from "../template.js";
import { BATCH_SOURCE_LABEL, streamMappings } from "../topology.js";
import type { Finding } from "./common.js";

/** Rule stream-unbounded-record-age: MaximumRecordAgeInSeconds missing or -1 (Lambda's default: infinite). */
export function checkStreamRecordAge(model: TemplateModel): Finding[] {
  return streamMappings(model).flatMap(({ esm, kind }) => {
    const age = numberProperty(esm.properties.MaximumRecordAgeInSeconds, -1);
    if (!age.known) {
      const message = `${esm.id}.MaximumRecordAgeInSeconds ${age.text} is not known before deployment: not checked`;
      return [finding("unresolved-reference", esm.id, message)];
    }
    if (age.value !== -1) return [];
    const what =
      esm.properties.MaximumRecordAgeInSeconds === undefined
        ? "has no MaximumRecordAgeInSeconds (default -1)"
        : "has MaximumRecordAgeInSeconds -1";
    const message = `mapping ${esm.id} of a ${BATCH_SOURCE_LABEL[kind]} ${what}: records are kept retrying until the stream trims them`;
    return [finding("stream-unbounded-record-age", esm.id, message)];
  });
}
