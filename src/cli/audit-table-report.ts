import type { DuplicateExample, DuplicateGroup } from "../audit/duplicate-tally.js";
import type { TableAuditReport } from "../audit/table-audit.js";
import { engine, isEngineName } from "../engines/registry.js";

/** `eonce audit table`'s human report: the figures, then the most duplicated effects and groups, then the verdict. */
export function formatTableAudit(r: TableAuditReport): string {
  return [...figures(r), ...examples(r), ...topGroups(r), verdict(r)].join("\n");
}

function figures(r: TableAuditReport): string[] {
  const histogram = Object.entries(r.rowsPerDuplicatedEffect)
    .map(([rows, n]) => `${rows} rows: ${n}`)
    .join(", ");
  const scope = r.groupByAttribute === null ? "" : ` within a ${r.groupByAttribute}`;
  return [
    `table ${r.table} (primary key ${r.primaryKey.join(", ")}), effect key ${r.keyAttribute}${scope}`,
    ...cost(r),
    `rows read (holding ${r.keyAttribute}): ${r.rowsRead}; without ${r.keyAttribute}: ${r.rowsWithoutKey}`,
    `effects (distinct ${r.keyAttribute}${scope}): ${r.effects}; held by more than one row: ${r.duplicatedEffects}` +
      (histogram ? ` (${histogram})` : ""),
    `extra rows (beyond the first of each effect): ${r.extraRows} = ${percent(r.extraRowShare)} of rows read`,
    `rows in duplicated effects (first rows included): ${r.rowsInDuplicatedEffects} = ` +
      `${percent(r.duplicatedRowShare)} of rows read`,
    ...(r.groups === null
      ? []
      : [
          `groups (distinct ${r.groupByAttribute}): ${r.groups.read}; holding duplicates: ${r.groups.withDuplicates}; ` +
            `rows without ${r.groupByAttribute}: ${r.groups.rowsWithoutGroup}`,
        ]),
  ];
}

/** How the table was read and what it cost, in the engine's terms (its `auditCost`). */
function cost(r: TableAuditReport): string[] {
  const seconds = r.wallMs / 1000;
  const rate = seconds > 0 ? Math.round(r.scannedCount / seconds) : r.scannedCount;
  const pace = `${count(r.pages, "page")}, ${seconds.toFixed(1)} s (${rate} rows/s)`;
  const lines = isEngineName(r.engine) ? engine(r.engine).auditCost?.(r, pace) : undefined;
  return lines ?? [`read ${r.scannedCount} rows, ${pace}`];
}

function examples(r: TableAuditReport): string[] {
  if (r.examples.length === 0) return [];
  return [
    `duplicated effects, most rows first (${r.examples.length} of ${r.duplicatedEffects}):`,
    ...r.examples.flatMap((e) => exampleLines(r, e)),
  ];
}

/** The effect, then its rows' primary keys on the next line. */
function exampleLines(r: TableAuditReport, e: DuplicateExample): string[] {
  const group = r.groupByAttribute === null ? "" : ` ${r.groupByAttribute} ${show(e.group)}`;
  const keys = e.primaryKeys.map((k) =>
    Object.entries(k)
      .map(([name, value]) => `${name}=${show(value)}`)
      .join(" "),
  );
  const more = e.rows > keys.length ? ", …" : "";
  return [`  ${r.keyAttribute} ${show(e.key)}${group}: ${e.rows} rows`, `    ${keys.join(", ")}${more}`];
}

function topGroups(r: TableAuditReport): string[] {
  if (r.groups === null || r.groups.top.length === 0) return [];
  const line = (g: DuplicateGroup) =>
    `  ${r.groupByAttribute} ${show(g.group)}: ${count(g.duplicatedEffects, "duplicated effect")}, ${count(g.extraRows, "extra row")}`;
  return [
    `groups with the most extra rows (${r.groups.top.length} of ${r.groups.withDuplicates}):`,
    ...r.groups.top.map(line),
  ];
}

function verdict(r: TableAuditReport): string {
  return r.duplicatedEffects === 0
    ? "no duplicates: every effect has one row (exit 0)"
    : `DUPLICATES: ${r.duplicatedEffects} effects have more than one row, ${r.extraRows} rows too many (exit 1)`;
}

function count(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? "" : "s"}`;
}

function show(value: unknown): string {
  return JSON.stringify(value);
}

function percent(share: number): string {
  return `${(share * 100).toFixed(2)} %`;
}
