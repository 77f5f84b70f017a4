/**
 * Issue 29, point 5: one spelling and one time format across answers, webhooks and the CLI
 * (docs/api-conventions.md). Walks the committed document (test/openapi.test.ts proves it is what the
 * routes serve): every time is the shared `Timestamp` (src/core/schema.ts) unless the spec or
 * another protocol fixes it, and every field name is camelCase unless the spec fixes it. The CLI
 * prints the operator API's answers (test/cli.test.ts), so it follows.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { OPENAPI_FILE } from "../scripts/openapi.js";
import { Timestamp } from "../src/core/schema.js";

type Json = Record<string, unknown>;
const document = JSON.parse(readFileSync(OPENAPI_FILE, "utf8")) as Json;
const conventions = readFileSync(new URL("../docs/api-conventions.md", import.meta.url), "utf8");

/** Times the spec or another protocol fixes, by where they are: `<operation or webhook> <field>`. */
const TIME_EXCEPTIONS = new Set([
  "GET /auth/session iat", // spec 2.2: Unix seconds
  "GET /auth/session exp",
  "GET /auth/bot-challenge exp", // altcha-lib's signed challenge: Unix milliseconds
  "GET /auth/bot-challenge expiresAt",
  "POST /auth/admin/members/import createdAt", // the old system's time as its export writes it: ISO 8601 or Unix milliseconds
]);
/** Names the spec fixes in answers and webhooks; everything Latch adds is camelCase. */
const SPEC_NAMES = new Set(["recordid", "authentication_status", "authentication_type", "_2fa_status", "event_type", "two_factor_required"]);
/** The spec's request field (spec 4.1 and on), kebab-case. */
const SPEC_REQUEST_NAMES = new Set(["bot-challenge-response"]);
/** OAuth's names in a provider's form post (RFC 6749 4.1.2, OpenID Connect's `id_token`), a request only. */
const PROTOCOL_REQUEST_NAMES = new Set(["error_description", "id_token"]);
const CAMEL_CASE = /^[a-z][a-zA-Z0-9]*$/;
/** What a time's name looks like: `createdAt`, `at`, `lastSeen`, `iat`, `exp`, `expires`, `timestamp`. */
const TIME_NAME = /(^at|At|^iat|^exp|Seen|^expires|[tT]imestamp|[tT]ime|[dD]ate)$/;

interface Field {
  where: string;
  name: string;
  schema: Json;
  side: "request" | "answer";
}

/** Every property of every schema under `node`, nested ones included. */
function collectFields(node: unknown, where: string, side: Field["side"], into: Field[]): void {
  if (Array.isArray(node)) return node.forEach((item) => collectFields(item, where, side, into));
  if (node === null || typeof node !== "object") return;
  const properties = (node as Json).properties as Record<string, Json> | undefined;
  for (const [name, schema] of Object.entries(properties ?? {})) into.push({ where, name, schema, side });
  for (const value of Object.values(node as Json)) collectFields(value, where, side, into);
}

function documentFields(): Field[] {
  const fields: Field[] = [];
  for (const [path, operations] of Object.entries(document.paths as Record<string, Record<string, Json>>)) {
    for (const [method, operation] of Object.entries(operations)) {
      const where = `${method.toUpperCase()} ${path}`;
      collectFields(operation.requestBody, where, "request", fields);
      collectFields(operation.parameters, where, "request", fields);
      collectFields(operation.responses, where, "answer", fields);
    }
  }
  for (const [event, hook] of Object.entries(document.webhooks as Record<string, Json>)) collectFields(hook, `webhook ${event}`, "answer", fields);
  collectFields(document.components, "components", "answer", fields);
  return fields;
}

const withoutDescription = (schema: Json): Json => Object.fromEntries(Object.entries(schema).filter(([key]) => key !== "description"));
const timestampShape = withoutDescription(JSON.parse(JSON.stringify(Timestamp)) as Json);

/** The shared Timestamp, or Timestamp-or-null. */
function isTimestamp(schema: Json): boolean {
  const variants = (schema.anyOf as Json[] | undefined) ?? [schema];
  const times = variants.filter((v) => v.type !== "null");
  return times.length === 1 && variants.length - times.length <= 1 && sameShape(times[0]!);
}

function sameShape(schema: Json): boolean {
  try {
    assert.deepStrictEqual(withoutDescription(schema), timestampShape);
    return true;
  } catch {
    return false;
  }
}

/** By its name, its own format (or a variant's), or a description that names a Unix time. */
function looksLikeTime(field: Field): boolean {
  const variants = [field.schema, ...((field.schema.anyOf as Json[] | undefined) ?? [])];
  return (
    TIME_NAME.test(field.name) || variants.some((v) => v.format === "date-time" || /Unix|epoch/i.test(typeof v.description === "string" ? v.description : ""))
  );
}

test("every time in an answer or a webhook is the shared Timestamp (ISO 8601 UTC), but for the documented exceptions", () => {
  const fields = documentFields().filter(looksLikeTime);
  assert.ok(fields.length > 20, `the walk finds the document's times (${fields.length})`);
  const seen = new Set<string>();
  const wrong: string[] = [];
  for (const field of fields) {
    const key = `${field.where} ${field.name}`;
    if (TIME_EXCEPTIONS.has(key)) {
      seen.add(key);
      continue;
    }
    if (!isTimestamp(field.schema)) wrong.push(`${key}: ${JSON.stringify(field.schema)}`);
  }
  assert.deepEqual(wrong, [], "not the shared Timestamp (src/core/schema.ts): use it, or add the exception to docs/api-conventions.md#times");
  assert.deepEqual(
    [...TIME_EXCEPTIONS].filter((key) => !seen.has(key)),
    [],
    "an exception that no longer exists: drop it here and in the docs",
  );
  for (const key of TIME_EXCEPTIONS) assert.ok(conventions.includes(`\`${key.split(" ").pop()}\``), `docs/api-conventions.md lists ${key}`);
});

test("every field name is camelCase but for the spec's own names, and the spec's two spellings of recordid/recordId are where it puts them", () => {
  const fields = documentFields();
  const wrong = fields
    .filter(
      (f) =>
        !CAMEL_CASE.test(f.name) &&
        !SPEC_NAMES.has(f.name) &&
        !(f.side === "request" && (SPEC_REQUEST_NAMES.has(f.name) || PROTOCOL_REQUEST_NAMES.has(f.name))),
    )
    .map((f) => `${f.where} ${f.name}`);
  assert.deepEqual([...new Set(wrong)], [], "not camelCase and not a name the spec fixes (docs/api-conventions.md#names)");
  // Spec 2.1: `recordid` in answers and webhooks, `recordId` in requests and in session data (GET /auth/session).
  const recordIdAnswers = fields.filter((f) => f.side === "answer" && f.name === "recordId").map((f) => f.where);
  assert.deepEqual([...new Set(recordIdAnswers)], ["GET /auth/session"]);
  assert.deepEqual(
    fields.filter((f) => f.side === "request" && f.name === "recordid"),
    [],
  );
  // The naming table is complete: every name of an answer or a webhook is in it, with where it comes from.
  const unlisted = [...new Set(fields.filter((f) => f.side === "answer").map((f) => f.name))].filter((name) => !conventions.includes(`\`${name}\``));
  assert.deepEqual(unlisted, [], "add these names to the table of docs/api-conventions.md#names");
  for (const name of [...SPEC_REQUEST_NAMES, ...PROTOCOL_REQUEST_NAMES])
    assert.ok(conventions.includes(`\`${name}\``), `docs/api-conventions.md lists ${name}`);
});
