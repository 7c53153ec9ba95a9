import { randomBytes } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Prng } from "../../sim/prng.js";
import { filesUnder } from "./files.js";

/** An object to upload: its key and body. */
export interface UploadObject {
  key: string;
  body: Buffer;
}

/** Every file under `folder` (recursively), keyed by its path relative to the folder with `/`. */
export async function objectsFromFolder(folder: string): Promise<UploadObject[]> {
  const out: UploadObject[] = [];
  for (const file of await filesUnder(folder))
    out.push({ key: file.relative, body: await readFile(file.path) });
  if (out.length === 0) throw new Error(`no files under ${folder}`);
  return out;
}

/**
 * Versions of keys with their own content: every subfolder of `folder`, in natural order (`1`, `2`, …, `10`), is
 * one round of uploads, keyed as `--from` keys them. A key in several rounds gets several versions, uploaded in
 * round order, each with that round's bytes.
 */
export async function objectsFromVersions(folder: string): Promise<UploadObject[]> {
  const rounds = (await readdir(folder, { withFileTypes: true }))
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort(new Intl.Collator("en", { numeric: true }).compare);
  if (rounds.length === 0) throw new Error(`no version folders under ${folder} (expected 1/, 2/, …)`);
  const out: UploadObject[] = [];
  for (const round of rounds) out.push(...(await objectsFromFolder(join(folder, round))));
  return out;
}

/** `count` generated objects; keys include a space and a `+` so that form-URL-encoding is exercised. */
export function generatedObjects(count: number): UploadObject[] {
  return Array.from({ length: count }, (_, i) => ({ key: `generated/object ${i}+v.txt`, body: body(i) }));
}

/** `objects` followed by `count` uploads again of keys picked among them: new events of the same keys. */
export function withReuploads(objects: UploadObject[], count: number, prng: Prng): UploadObject[] {
  const out = [...objects];
  for (let i = 0; i < count && objects.length > 0; i++) {
    const again = objects[prng.int(0, objects.length - 1)] as UploadObject;
    out.push({ key: again.key, body: again.body });
  }
  return out;
}

function body(i: number): Buffer {
  return Buffer.from(`object ${i}\n${randomBytes(12).toString("hex")}\n`);
}
