import type { Json } from "./template.js";

/** SAM's resources as the CloudFormation resources the transform deploys (filled in below). */
export function lowerSam(doc: Json): Json {
  return doc;
}
