import { randomBytes } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import type { Prng } from "../../local/sim/prng.js";

/** An object to upload: its key and body. */
export interface UploadObject {
  key: string;
  body: Buffer;
}

/** Every file under `folder` (recursively), keyed by its path relative to the folder with `/`. */
export async function objectsFromFolder(folder: string): Promise<UploadObject[]> {
  const out: UploadObject[] = [];
  const walk = async (dir: string) => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile())
        out.push({ key: relative(folder, path).split(sep).join("/"), body: await readFile(path) });
    }
  };
  await walk(folder);
  out.sort((a, b) => (a.key < b.key ? -1 : 1));
  if (out.length === 0) throw new Error(`no files under ${folder}`);
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
