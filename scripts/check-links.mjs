#!/usr/bin/env node
// Every relative link of the Markdown documentation resolves: the file (or folder) it names exists, and its
// `#anchor` is a heading of the Markdown page it points at (GitHub's heading ids). Exits 1 listing each broken link.
// Part of `npm run lint`: `node scripts/check-links.mjs [files or folders…]` (default: the README, CONTRIBUTING,
// CHANGELOG and docs/).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const DEFAULT = ["README.md", "CONTRIBUTING.md", "CHANGELOG.md", "docs"];

function* markdownFiles(path) {
  if (statSync(path).isDirectory()) {
    for (const name of readdirSync(path)) yield* markdownFiles(join(path, name));
  } else if (path.endsWith(".md")) yield path;
}

const blank = (text) => text.replace(/[^\n]/g, " ");

/** Markdown without fenced code blocks (a `#` line there is no heading). */
const withoutFences = (markdown) => markdown.replace(/^( {0,3})(```|~~~)[\s\S]*?^\1\2[^\n]*$/gm, blank);

/** Markdown without code, fenced or inline: links there are examples, not links. */
const prose = (markdown) => withoutFences(markdown).replace(/(`+)[\s\S]*?\1/g, blank);

/** GitHub's id for a heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`. */
export function slug(heading) {
  return heading
    .replace(/<[^>]*>/g, "")
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/[`*]/g, "")
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** The anchors of a Markdown page: its headings' ids (repeated ones numbered, as GitHub does) and explicit ids. */
export function anchors(markdown) {
  const seen = new Map();
  const ids = new Set();
  for (const [, text] of withoutFences(markdown).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const base = slug(text);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    ids.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const [, id] of markdown.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) ids.add(id);
  return ids;
}

/** The relative link targets of a page: inline links and images, reference definitions, HTML href/src. */
export function links(markdown) {
  const text = prose(markdown);
  const found = [];
  for (const m of text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) found.push(m[1]);
  for (const m of text.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)) found.push(m[1]);
  for (const m of text.matchAll(/<(?:a|img)\s[^>]*(?:href|src)="([^"]+)"/g)) found.push(m[1]);
  return found.filter((l) => !/^[a-z][a-z0-9+.-]*:/i.test(l));
}

const headingsOf = new Map();
function headings(file) {
  if (!headingsOf.has(file)) headingsOf.set(file, anchors(readFileSync(file, "utf8")));
  return headingsOf.get(file);
}

/** The broken relative links of `paths` (files or folders): `file: link (why)` each. */
export function brokenLinks(paths = DEFAULT, base = root) {
  const broken = [];
  for (const path of paths) {
    for (const file of markdownFiles(resolve(base, path))) {
      for (const link of links(readFileSync(file, "utf8"))) {
        const [target, anchor] = link.split("#", 2);
        const to = target ? resolve(dirname(file), decodeURIComponent(target)) : file;
        const where = `${relative(base, file)}: ${link}`;
        if (!existsSync(to)) broken.push(`${where} (no such file)`);
        else if (anchor && to.endsWith(".md") && !headings(to).has(decodeURIComponent(anchor)))
          broken.push(`${where} (no heading #${anchor} in ${relative(base, to)})`);
      }
    }
  }
  return broken;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const args = process.argv.slice(2);
  const broken = brokenLinks(args.length > 0 ? args : DEFAULT);
  for (const b of broken) console.error(b);
  if (broken.length > 0) {
    console.error(`${broken.length} broken link${broken.length === 1 ? "" : "s"}`);
    process.exitCode = 1;
  }
}
