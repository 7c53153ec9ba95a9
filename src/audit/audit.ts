import type { Finding } from "./findings.js";
import { checkAsyncOnFailure } from "./rules/async-on-failure.js";
import { checkBatchItemFailures } from "./rules/batch-item-failures.js";
import { checkEventBridgeDlq } from "./rules/eventbridge-dlq.js";
import { checkFifo } from "./rules/fifo.js";
import { checkStateTableTtl } from "./rules/guard-table.js";
import { checkS3GuardTable } from "./rules/s3-guard.js";
import { checkRedrive } from "./rules/sqs-redrive.js";
import { checkVisibility } from "./rules/sqs-visibility.js";
import { checkStreamBisect } from "./rules/stream-bisect.js";
import { checkStreamOnFailure } from "./rules/stream-on-failure.js";
import { checkStreamRecordAge } from "./rules/stream-record-age.js";
import { checkStreamRetries } from "./rules/stream-retries.js";
import { checkStreamStartingPosition } from "./rules/stream-starting-position.js";
import { checkStreamTumblingWindow } from "./rules/stream-tumbling-window.js";
import type { TemplateModel } from "./template.js";

const CHECKS = [
  checkVisibility,
  checkRedrive,
  checkBatchItemFailures,
  checkStreamBisect,
  checkStreamRetries,
  checkStreamRecordAge,
  checkStreamOnFailure,
  checkStreamStartingPosition,
  checkStreamTumblingWindow,
  checkFifo,
  checkS3GuardTable,
  checkAsyncOnFailure,
  checkStateTableTtl,
  checkEventBridgeDlq,
];

/** Every rule on one template: errors first, then by resource and rule; a repeated finding once. */
export function auditModel(model: TemplateModel): Finding[] {
  const seen = new Set<string>();
  const findings = CHECKS.flatMap((check) => check(model)).filter((f) => {
    const key = `${f.rule}\u0000${f.resource}\u0000${f.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  const rank = (f: Finding) => (f.severity === "error" ? 0 : 1);
  return findings.sort(
    (a, b) => rank(a) - rank(b) || a.resource.localeCompare(b.resource) || a.rule.localeCompare(b.rule),
  );
}
