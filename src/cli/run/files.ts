import { readdir } from "node:fs/promises";
import { join, relative, sep } from "node:path";

/** Every file under `folder` (recursively) and its path relative to the folder with `/`, in that path's order. */
export async function filesUnder(folder: string): Promise<{ path: string; relative: string }[]> {
  const out: { path: string; relative: string }[] = [];
  const walk = async (dir: string) => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile()) out.push({ path, relative: relative(folder, path).split(sep).join("/") });
    }
  };
  await walk(folder);
  return out.sort((a, b) => (a.relative < b.relative ? -1 : 1));
}
