import { createHash } from "node:crypto";
import {
  fencedColumn,
  INLINE_COLUMN_NAMES,
  INLINE_COLUMNS,
  INLINE_STEPS,
  type InlineStatements,
  type InlineStep,
  type InlineStepName,
  insertedState,
  rowNotNewer,
  stateSets,
} from "./inline-sql.js";
import { qualified } from "./schema.js";

/**
 * Server functions of inline state (`serverFunctions`): each step of `InlinePostgresStore` as one PL/pgSQL function
 * per table, created by `migrateInline`. A call is one short statement, cheap to parse and plan; the function's own
 * statements are planned once per server connection and kept (PL/pgSQL caches their plans), which named statements
 * do only where the connection is kept: not behind RDS Proxy (a named statement pins it) nor PgBouncer's transaction
 * pooling before 1.21. docs/decisions/0010-postgres-server-functions.md.
 *
 * A function does what its statement (`InlineStatements.statement`) does, built from the same `InlineStep`, in
 * statements of its own within the call's one transaction: lock the row (`FOR UPDATE`) and read its state, then
 * insert the new row or update the locked one under the step's condition, and return the locked row's state as the
 * statement does. The user's columns of a row write vary per event, so those statements are the one part built per
 * call (`EXECUTE`, each value a quoted literal, which takes the column's type as the statement's untyped parameter
 * does); without a row write every statement is static. Nothing of the user's columns is baked in, so columns added,
 * dropped or retyped later need no new function. The first parameter has the key column's type at creation
 * (`%TYPE`): if that type changed since, the function does nothing and answers `landed = -1` where the old and new
 * types compare (`text` and `varchar`), and fails where they do not (`uuid = text`); either way the store, finding
 * that the function no longer fits the table (`functionFits`, inline-schema.ts), uses its statement.
 *
 * The answer is one json value with the statement's columns (`landed`, `wrote`, the locked row's `eo_*`), the state
 * left out when the step landed and the caller does not read it (all but a claim): a short answer is cheaper to build
 * and to parse than a row of seventeen columns.
 */

/** A step's server function. */
export interface InlineFunction {
  /** Unqualified; it ends in a hash of the definition, so a changed definition is another function. */
  readonly name: string;
  /** `CREATE FUNCTION …` */
  readonly definition: string;
  /**
   * The statement that calls it with a row write of `columns` (plain identifiers, written into the text; undefined:
   * none), their values the parameters after the step's; its one column, `r`, is the answer.
   */
  call(columns: readonly string[] | undefined): string;
}

/** The result of a call that the function could not serve (the key column's type changed): use the statement. */
export const NOT_SERVED = -1;

/** The functions of one table: `schema` and `table` unquoted, `sql` its statements' builder. */
export function inlineFunctions(
  schema: string,
  table: string,
  sql: InlineStatements,
): Record<InlineStepName, InlineFunction> {
  const steps = Object.values(INLINE_STEPS) as InlineStep[];
  return Object.fromEntries(steps.map((s) => [s.name, inlineFunction(schema, table, sql, s)])) as Record<
    InlineStepName,
    InlineFunction
  >;
}

function inlineFunction(
  schema: string,
  table: string,
  sql: InlineStatements,
  step: InlineStep,
): InlineFunction {
  const template = definition(sql, step);
  const hash = createHash("sha256").update(template).digest("hex").slice(0, 10);
  const name = `eonce_${step.name}_${table.slice(0, 28)}_${hash}`;
  const qualifiedName = qualified(schema, name);
  const params = ["$1", ...step.params.map((_, i) => `$${i + 2}`)];
  return {
    name,
    definition: template.replace(NAME, qualifiedName),
    call(columns) {
      let row = "";
      if (step.write) {
        const values = (columns ?? []).map((_, i) => `$${params.length + 1 + i}`);
        // Quoted elements: a column named null is not NULL.
        const names = (columns ?? []).map((c) => `"${c}"`).join(",");
        row = columns ? `, '{${names}}', ARRAY[${values.join(", ")}]::text[]` : ", NULL, NULL";
      }
      return `SELECT ${qualifiedName}(${params.join(", ")}${row}) AS r`;
    },
  };
}

const NAME = "<name>";

/** The definition, the function's name left as `NAME`. */
function definition(sql: InlineStatements, step: InlineStep): string {
  const args = [`${sql.table}.${sql.key}%TYPE`, ...step.params, ...(step.write ? ["text[]", "text[]"] : [])];
  const state = INLINE_COLUMN_NAMES.map((c) => `\n  ${c} ${INLINE_COLUMNS[c].split(" ")[0]};`);
  return `CREATE FUNCTION ${NAME}(${args.join(", ")})
RETURNS json
LANGUAGE plpgsql AS $eonce$
#variable_conflict use_column
DECLARE
  landed bigint;
  wrote boolean;${state.join("")}
  present boolean;
  fits boolean;
  not_newer boolean;
  n bigint;
  extra text := '';
  extra_values text := '';${step.write ? `\n  row_names ALIAS FOR $${step.params.length + 2};\n  row_values ALIAS FOR $${step.params.length + 3};` : ""}
BEGIN
${lockedRow(sql, step)}
  IF NOT fits THEN
    RETURN json_build_object('landed', ${NOT_SERVED});
  END IF;
  IF NOT present THEN
${step.insert ? insertBranch(sql, step) : "    landed := 0;"}
${updateBranch(sql, step)}
  END IF;
${answer(step)}
END
$eonce$`;
}

/** The answer: whether the step landed, whether its row write did, and the locked row's state. */
function answer(step: InlineStep): string {
  const state = INLINE_COLUMN_NAMES.map((c) => `'${c}', ${c}`).join(", ");
  // A landed claim reports the state it took over (the attempt count, `previous`); other steps ignore it.
  const short =
    step.name === "claim"
      ? ""
      : "  IF landed > 0 THEN\n    RETURN json_build_object('landed', landed, 'wrote', wrote);\n  END IF;\n";
  return `${short}  RETURN json_build_object('landed', landed, 'wrote', wrote, ${state});`;
}

/** Locks the row and reads its state (as the statement's `old`), whether it exists and whether its key's type fits. */
function lockedRow(sql: InlineStatements, step: InlineStep): string {
  const state = INLINE_COLUMN_NAMES.map((c) => `old.${c}`);
  return `  ${sql.lockOld()}
  SELECT old.row_key IS NOT NULL, pg_catalog.pg_typeof(old.row_key) = pg_catalog.pg_typeof($1), ${rowNotNewer(step)},
    ${state.join(", ")}
  INTO present, fits, not_newer, ${INLINE_COLUMN_NAMES.join(", ")}
  FROM (SELECT 1) AS one LEFT JOIN old ON true;`;
}

/** The parameters an `EXECUTE`d statement gets: the step's. */
const using = (step: InlineStep) => `USING ${["$1", ...step.params.map((_, i) => `$${i + 2}`)].join(", ")}`;

/** A new row: static without a row write; with one, its columns and values added per call. */
function insertBranch(sql: InlineStatements, step: InlineStep): string {
  const insert = (withRow: boolean) => {
    const state = insertedState(step, withRow);
    return {
      names: [sql.key, ...Object.keys(state)].join(", "),
      values: ["$1", ...Object.values(state)].join(", "),
    };
  };
  const plain = insert(false);
  const conflict = `ON CONFLICT (${sql.key}) DO NOTHING`;
  const staticInsert = `INSERT INTO ${sql.table} (${plain.names}) VALUES (${plain.values}) ${conflict};`;
  let body = `    ${staticInsert}`;
  if (step.write) {
    const row = insert(true);
    body = `    IF row_names IS NULL THEN
      ${staticInsert}
    ELSE
      FOR i IN 1 .. coalesce(cardinality(row_names), 0) LOOP
        extra := extra || ', ' || pg_catalog.quote_ident(row_names[i]);
        extra_values := extra_values || ', ' || pg_catalog.quote_nullable(row_values[i]);
      END LOOP;
      EXECUTE $q$INSERT INTO ${sql.table} (${row.names}$q$ || extra || $q$) VALUES (${row.values}$q$ || extra_values
        || $q$) ${conflict}$q$ ${using(step)};
    END IF;`;
  }
  return `${body}
    GET DIAGNOSTICS n = ROW_COUNT;
    landed := n;
    wrote := CASE WHEN n > 0 THEN true END;`;
}

/** The locked row's update under the step's condition: static without a row write; with one, its columns per call. */
function updateBranch(sql: InlineStatements, step: InlineStep): string {
  const where = `WHERE old.${sql.key} = $1 AND ${step.condition}`;
  const staticUpdate = `UPDATE ${sql.table} AS old SET ${stateSets(step, false, "old").join(", ")}
      ${where};
    GET DIAGNOSTICS n = ROW_COUNT;
    landed := n;`;
  if (!step.write) return `  ELSE\n    ${staticUpdate}`;
  const column = fencedColumn(step, "old")("%1$I", "%2$L");
  return `  ELSIF row_names IS NULL THEN
    ${staticUpdate}
  ELSE
    FOR i IN 1 .. coalesce(cardinality(row_names), 0) LOOP
      extra := extra || pg_catalog.format($q$, ${column}$q$, row_names[i], row_values[i]);
    END LOOP;
    EXECUTE $q$UPDATE ${sql.table} AS old SET ${stateSets(step, true, "old").join(", ")}$q$ || extra
      || $q$ ${where}$q$ ${using(step)};
    GET DIAGNOSTICS n = ROW_COUNT;
    landed := n;
    wrote := CASE WHEN n > 0 THEN not_newer END;`;
}
