import type { TemplateModel } from "../template.js";
import { type Finding, unboundedStreamSetting } from "./common.js";

/** Rule stream-unbounded-record-age: MaximumRecordAgeInSeconds missing or -1 (Lambda's default: infinite). */
export function checkStreamRecordAge(model: TemplateModel): Finding[] {
  return unboundedStreamSetting(
    model,
    "MaximumRecordAgeInSeconds",
    "stream-unbounded-record-age",
    "records are kept retrying until the stream trims them",
  );
}
