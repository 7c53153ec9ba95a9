import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { anchors, brokenLinks, links, slug } from "../../scripts/check-links.mjs";
import { readmeStarts, runFlags } from "../../scripts/readme-starts.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const read = (path: string) => readFileSync(join(root, path), "utf8");

describe("the README and the docs", () => {
  it("the README is a front door: under 250 lines", () => {
    expect(read("README.md").split("\n").length).toBeLessThan(250);
  });

  it("the docs index links every page of docs/", () => {
    const listed = new Set(links(read("docs/README.md")));
    const pages = readdirSync(join(root, "docs")).filter((f) => f.endsWith(".md") && f !== "README.md");
    expect(pages.filter((p) => !listed.has(p))).toEqual([]);
    expect(listed).toContain("decisions/README.md");
  });

  it("every relative link resolves, anchors included (scripts/check-links.mjs, in npm run lint)", () => {
    expect(brokenLinks()).toEqual([]);
  });

  it("the README's three five-minute starts: a file and an eonce run of it each", () => {
    const starts = readmeStarts(read("README.md"));
    expect(starts.map((s) => s.name)).toEqual(["s3-dynamodb", "inline-dynamodb", "postgres"]);
    for (const s of starts) {
      const run = s.commands.find((c) => c.startsWith("npx eonce run "));
      expect(run, s.name).toBeDefined();
      const [file] = (run ?? "").split(" ")[3]?.split(":") ?? [];
      expect(Object.keys(s.files)).toEqual([file]);
    }
    expect(runFlags(starts[1]?.commands[0] ?? "").get("--effects")).toEqual(["records:sequencer"]);
  });
});

describe("scripts/check-links.mjs", () => {
  it("names headings as GitHub does", () => {
    expect(slug("Fenced S3 output: `effectively-once/sinks/s3`")).toBe(
      "fenced-s3-output-effectively-oncesinkss3",
    );
    expect(slug("3. PostgreSQL: the effect in the commit's transaction")).toBe(
      "3-postgresql-the-effect-in-the-commits-transaction",
    );
    expect([...anchors("# A\n\n## A\n\n```\n# not a heading\n```\n")]).toEqual(["a", "a-1"]);
  });

  it("takes links from prose only, not from code", () => {
    expect(
      links('[a](x.md) `[b](y.md)` <a href="z.md">z</a> [web](https://example.com)\n```\n[c](w.md)\n```\n'),
    ).toEqual(["x.md", "z.md"]);
  });
});
