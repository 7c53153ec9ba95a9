import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { imagesScenario } from "../examples/images/scenario.js";
import { recordsScenario } from "../examples/records/scenario.js";
import { renderHtmlReport } from "../src/local/demo/report-html.js";
import { type DemoReport, runDemo } from "../src/local/demo/run-demo.js";
import { LocalRuntime } from "../src/local/runtime.js";

/** Debian's chromium; CI installs it (`apt-get install -y chromium`). */
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

let dir: string;
let report: DemoReport;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "eonce-report-"));
  const runtime = await LocalRuntime.start({ dynamodbEndpoint: inject("dynamodbEndpoint") });
  try {
    report = await runDemo({ runtime, scenarios: [recordsScenario, imagesScenario], seed: 2, scale: 0.15 });
  } finally {
    await runtime.stop();
  }
}, 180_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("HTML report", () => {
  it("is self-contained: no script and no external resource", () => {
    const html = renderHtmlReport(report);
    expect(html).not.toMatch(/<script/i);
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//i);
  });

  it("renders in headless Chromium with its charts: off vs on per scenario and a timeline", async () => {
    const file = join(dir, "report.html");
    await writeFile(file, renderHtmlReport(report));
    const context = await chromium.launchPersistentContext(join(dir, "profile"), {
      executablePath: CHROMIUM,
      args: ARGS,
      viewport: { width: 1200, height: 900 },
    });
    try {
      const page = await context.newPage();
      const requests: string[] = [];
      page.on("request", (r) => {
        if (!r.url().startsWith("file:") && !r.url().startsWith("data:")) requests.push(r.url());
      });
      await page.goto(pathToFileURL(file).href);
      const shot = join(dir, "report.png");
      await page.screenshot({ path: shot, fullPage: true });
      expect((await stat(shot)).size).toBeGreaterThan(10_000);
      expect(requests).toEqual([]);

      // Two bar charts per scenario (what went wrong, work done) and the images timelines.
      for (const name of ["records", "images"]) {
        await expect.poll(() => page.locator(`svg.chart[data-chart="${name}-failures"]`).count()).toBe(1);
        expect(await page.locator(`svg.chart[data-chart="${name}-work"]`).count()).toBe(1);
        const bars = page.locator(`svg.chart[data-chart="${name}-failures"] rect.bar`);
        expect(await bars.count()).toBe(6); // 3 metrics × (off, on)
      }
      const timelines = page.locator("svg.chart.timeline");
      expect(await timelines.count()).toBeGreaterThanOrEqual(1);
      expect(await page.locator("svg.chart.timeline circle.delivery").count()).toBeGreaterThan(1);
      const text = (await page.locator("body").textContent()) ?? "";
      for (const label of [
        "duplicate effects",
        "stale results",
        "lost events",
        "guard off",
        "guard on",
        "processed",
      ]) {
        expect(text).toContain(label);
      }
      // The charts are laid out, not just present in the markup.
      const box = await page.locator('svg.chart[data-chart="images-failures"]').boundingBox();
      expect(box?.width ?? 0).toBeGreaterThan(100);
      expect(box?.height ?? 0).toBeGreaterThan(100);
      expect(await page.locator("#summary-table tbody tr").count()).toBe(4);
    } finally {
      await context.close();
    }
  }, 120_000);
});
