import { stat } from "node:fs/promises";
import { OptionsError } from "../../core/errors.js";
import { createPrng } from "../../sim/prng.js";
import { eventBridgeDetail } from "./envelopes.js";
import { checkMessagesFor, messageEffectKey, type ReplayMessage, readMessages } from "./messages.js";
import {
  generatedObjects,
  objectsFromFolder,
  objectsFromVersions,
  type UploadObject,
  withReuploads,
} from "./objects.js";
import type { ResolvedRunOptions } from "./options.js";

/** What a run feeds the handler: objects to upload, or application messages to send. */
export type Inputs =
  | { kind: "objects"; objects: UploadObject[] }
  | { kind: "messages"; messages: ReplayMessage[] };

/** Reads and checks the inputs, before any server starts. */
export async function readInputs(o: ResolvedRunOptions): Promise<Inputs> {
  if (o.messages !== undefined) {
    const messages = await readMessages(o.messages);
    checkMessagesFor(messages, o.fifo, o.source);
    if (o.source === "eventbridge") for (const m of messages) eventBridgeDetail(m);
    const effects = o.effects;
    if (effects) for (const m of messages) messageEffectKey(m, effects.attribute);
    return { kind: "messages", messages };
  }
  for (const [flag, folder] of [
    ["--from", o.from],
    ["--versions", o.versions],
  ] as const) {
    if (folder === undefined) continue;
    const info = await stat(folder).catch(() => undefined);
    if (!info?.isDirectory()) throw new OptionsError(`${flag}: no such folder: ${folder}`);
  }
  const objects =
    o.from !== undefined
      ? await objectsFromFolder(o.from)
      : o.versions !== undefined
        ? await objectsFromVersions(o.versions)
        : generatedObjects(o.generate ?? 10);
  return {
    kind: "objects",
    objects: withReuploads(objects, o.reuploads, createPrng(o.seed).fork("objects")),
  };
}
