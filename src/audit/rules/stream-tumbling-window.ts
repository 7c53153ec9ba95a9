import { finding } from "../findings.js";
import { describeReference, numberProperty, type TemplateModel } from "../template.js";
import { BATCH_SOURCE_LABEL, streamMappings } from "../topology.js";
import type { Finding } from "./common.js";

/** Rule stream-tumbling-window: a stream mapping with a tumbling window, which the stream wrappers refuse. */
export function checkStreamTumblingWindow(model: TemplateModel): Finding[] {
  return streamMappings(model).flatMap(({ esm, kind }) => {
    const value = esm.properties.TumblingWindowInSeconds;
    const window = numberProperty(value, 0);
    // 0 turns the window off; a parameter may or may not.
    if (window.known && window.value === 0) return [];
    const shown = window.known ? `${window.value} s` : describeReference(value);
    const message = `mapping ${esm.id} of a ${BATCH_SOURCE_LABEL[kind]} has TumblingWindowInSeconds ${shown}: the stream wrappers refuse windowed batches`;
    return [finding("stream-tumbling-window", esm.id, message)];
  });
}
