import {
  type AttributeValue,
  DescribeTableCommand,
  type DynamoDBClient,
  ScanCommand,
  type ScanCommandInput,
  type ScanCommandOutput,
} from "@aws-sdk/client-dynamodb";
import { attributeText } from "../../audit/attribute-text.js";
import { primaryKeyText } from "../../audit/duplicate-tally.js";
import {
  type AuditRow,
  auditRows,
  ROW_AUDIT_FIELDS,
  type RowAuditOptions,
  type RowSource,
  type TableAuditReport,
  type TableShape,
} from "../../audit/table-audit.js";
import * as opt from "../../core/options.js";
import { DYNAMODB_TABLE_FIELDS } from "./options.js";

export type { TableAuditReport, TableScanProgress } from "../../audit/table-audit.js";

export interface TableAuditOptions extends RowAuditOptions {
  client: DynamoDBClient;
  tableName: string;
  /** Parallel Scan segments (TotalSegments). Default 4. */
  segments?: number;
  /** Strongly consistent reads: twice the read units. Default false. */
  consistentRead?: boolean;
}

/** The options of `auditTable`; the fields with a doc are also the flags of `eonce audit table`. */
export const TABLE_AUDIT_OPTIONS = opt.schemaFor<TableAuditOptions>()({
  ...DYNAMODB_TABLE_FIELDS,
  ...ROW_AUDIT_FIELDS,
  segments: opt.integer({ min: 1, max: 1000, default: 4, doc: "DynamoDB: parallel Scan segments" }),
  consistentRead: opt.boolean({
    default: false,
    doc: "DynamoDB: strongly consistent reads (twice the read units)",
  }),
});

type AuditOptions = opt.Resolved<typeof TABLE_AUDIT_OPTIONS>;

/**
 * Reports the duplicated effects of a DynamoDB table: a parallel segmented Scan reading only the key, group and
 * primary key attributes of the rows holding the key attribute, tallied in bounded memory (see DuplicateTally).
 * Throws OptionsError for bad options, the SDK's error when the table cannot be described or read.
 */
export async function auditTable(options: TableAuditOptions): Promise<TableAuditReport> {
  const o = opt.resolveOptions("auditTable", TABLE_AUDIT_OPTIONS, options);
  return auditRows(dynamoDBRows(o), o);
}

/** The DynamoDB row source: DescribeTable, then every segment's pages. */
function dynamoDBRows(o: AuditOptions): RowSource {
  return {
    engine: "dynamodb",
    segments: o.segments,
    consistentRead: o.consistentRead,
    describe: () => describeTable(o),
    async read(shape, on) {
      const read = rowReader(o, shape.primaryKey);
      await scanSegments(o, scanInput(o, shape.primaryKey), {
        page: (page) =>
          on.page({
            rows: (page.Items ?? []).map(read),
            scanned: page.ScannedCount ?? 0,
            readUnits: page.ConsumedCapacity?.CapacityUnits,
          }),
        segmentDone: on.segmentDone,
      });
    },
    estimatedReadUnits: (shape) =>
      Math.ceil((shape.tableSizeBytes ?? 0) / 4096) * (o.consistentRead ? 1 : 0.5),
  };
}

async function describeTable(o: AuditOptions): Promise<TableShape> {
  const { Table } = await o.client.send(
    new DescribeTableCommand({ TableName: o.tableName }),
    o.signal ? { abortSignal: o.signal } : {},
  );
  const key = Table?.KeySchema ?? [];
  const hash = key.find((k) => k.KeyType === "HASH")?.AttributeName;
  if (hash === undefined) throw new Error(`table ${o.tableName} has no hash key in its description`);
  const range = key.find((k) => k.KeyType === "RANGE")?.AttributeName;
  return {
    table: o.tableName,
    primaryKey: range === undefined ? [hash] : [hash, range],
    estimatedRows: Table?.ItemCount ?? 0,
    tableSizeBytes: Table?.TableSizeBytes ?? 0,
  };
}

/** The Scan of every segment: the attributes needed, only the rows holding the key attribute. */
function scanInput(o: AuditOptions, primaryKey: readonly string[]): ScanCommandInput {
  const names = [
    ...new Set([o.keyAttribute, ...(o.groupByAttribute ? [o.groupByAttribute] : []), ...primaryKey]),
  ];
  const placeholder = (name: string) => `#a${names.indexOf(name)}`;
  return {
    TableName: o.tableName,
    TotalSegments: o.segments,
    ProjectionExpression: names.map(placeholder).join(", "),
    FilterExpression: `attribute_exists(${placeholder(o.keyAttribute)})`,
    ExpressionAttributeNames: Object.fromEntries(names.map((n) => [placeholder(n), n])),
    ConsistentRead: o.consistentRead,
    ReturnConsumedCapacity: "TOTAL",
    ...(o.pageLimit !== undefined ? { Limit: o.pageLimit } : {}),
  };
}

/** A returned row → the tally's texts: key, group (undefined: absent), primary key. */
function rowReader(o: AuditOptions, primaryKey: readonly string[]) {
  const [hash, range] = primaryKey as [string, string | undefined];
  const text = (item: Record<string, AttributeValue>, name: string) => {
    const value = item[name];
    return value === undefined ? undefined : attributeText(value);
  };
  return (item: Record<string, AttributeValue>): AuditRow => [
    text(item, o.keyAttribute) as string,
    o.groupByAttribute === undefined ? undefined : text(item, o.groupByAttribute),
    primaryKeyText(text(item, hash) as string, range === undefined ? undefined : text(item, range)),
  ];
}

/**
 * Every segment in parallel, each paging with ExclusiveStartKey until the end. The first failure aborts the other
 * segments' requests and is thrown.
 */
async function scanSegments(
  o: AuditOptions,
  input: ScanCommandInput,
  on: { page(page: ScanCommandOutput): void; segmentDone(): void },
): Promise<void> {
  const controller = new AbortController();
  const abortSignal = o.signal ? AbortSignal.any([o.signal, controller.signal]) : controller.signal;
  const segment = async (n: number) => {
    try {
      let start: Record<string, AttributeValue> | undefined;
      do {
        const page = await o.client.send(
          new ScanCommand({ ...input, Segment: n, ExclusiveStartKey: start }),
          {
            abortSignal,
          },
        );
        on.page(page);
        start = page.LastEvaluatedKey;
      } while (start !== undefined);
      on.segmentDone();
    } catch (error) {
      controller.abort();
      throw error;
    }
  };
  await Promise.all(Array.from({ length: o.segments }, (_, n) => segment(n)));
}
