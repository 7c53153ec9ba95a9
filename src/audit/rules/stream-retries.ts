import { finding } from "../findings.js";
import { numberProperty, type TemplateModel } from "../template.js";
import { BATCH_SOURCE_LABEL, streamMappings } from "../topology.js";
import type { Finding } from "./common.js";

/** Rule stream-unbounded-retries: MaximumRetryAttempts missing or -1 (Lambda's default for streams: infinite). */
export function checkStreamRetries(model: TemplateModel): Finding[] {
  return streamMappings(model).flatMap(({ esm, kind }) => {
    const retries = numberProperty(esm.properties.MaximumRetryAttempts, -1);
    if (!retries.known) {
      const message = `${esm.id}.MaximumRetryAttempts ${retries.text} is not known before deployment: not checked`;
      return [finding("unresolved-reference", esm.id, message)];
    }
    if (retries.value !== -1) return [];
    const what =
      esm.properties.MaximumRetryAttempts === undefined
        ? "has no MaximumRetryAttempts (default -1)"
        : "has MaximumRetryAttempts -1";
    const message = `mapping ${esm.id} of a ${BATCH_SOURCE_LABEL[kind]} ${what}: a failing record is retried until the stream trims it`;
    return [finding("stream-unbounded-retries", esm.id, message)];
  });
}
