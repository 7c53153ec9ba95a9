import type { TemplateModel } from "../template.js";
import { type Finding, unboundedStreamSetting } from "./common.js";

/** Rule stream-unbounded-retries: MaximumRetryAttempts missing or -1 (Lambda's default for streams: infinite). */
export function checkStreamRetries(model: TemplateModel): Finding[] {
  return unboundedStreamSetting(
    model,
    "MaximumRetryAttempts",
    "stream-unbounded-retries",
    "a failing record is retried until the stream trims it",
  );
}
