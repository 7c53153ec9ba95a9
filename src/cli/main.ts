#!/usr/bin/env node
import { readFileSync } from "node:fs";
import { Command, CommanderError } from "commander";
import { registerAudit } from "./audit.js";
import { registerAuditTable } from "./audit-table.js";
import { registerAuditTemplate } from "./audit-template.js";
import { registerChaos } from "./chaos.js";
import { registerDemo } from "./demo.js";
import { registerInspect } from "./inspect.js";
import { registerLocal } from "./local.js";
import { registerRun } from "./run.js";
import { registerState } from "./state.js";

// src/cli/main.ts and dist/cli/main.js are both two levels below package.json.
const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
  version: string;
};

// The AWS SDK warns, once per SDK copy and process (twice for a bundled handler), that its 2027 releases need
// Node 22: in a local tool's output that is noise. Set the variable to "false" to see it.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

const program = new Command("eonce")
  .description("effectively-once: exactly-once effects, in order, for S3/SQS/SNS/EventBridge pipelines")
  .version(version)
  // Usage errors exit 2, like unreadable input; 1 is reserved for "some input was malformed".
  .exitOverride();

// Each subcommand lives in its own module and registers itself here.
registerInspect(program);
registerDemo(program);
registerRun(program);
registerChaos(program);
const audit = registerAudit(program);
registerAuditTemplate(audit);
registerAuditTable(audit);
registerState(program);
registerLocal(program);

try {
  await program.parseAsync(process.argv);
} catch (e) {
  if (!(e instanceof CommanderError)) throw e;
  process.exitCode = e.exitCode === 0 ? 0 : 2;
}
