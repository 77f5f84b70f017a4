/**
 * Issue 18: every number of every rule lives in src/rules.ts. docs/limits.md is generated from it
 * and must match; no other source file may define a constant of the same name (a second copy that
 * could drift from the table).
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import * as rules from "../src/rules.js";
import { AUDIT_EVENTS_FILE, LIMITS_FILE, renderAuditEventsDocument } from "../scripts/generated-docs.js";

test("docs/limits.md is what src/rules.ts generates", () => {
  assert.equal(
    readFileSync(LIMITS_FILE, "utf8"),
    rules.renderLimitsDocument(),
    "docs/limits.md is out of date with src/rules.ts: run `npm run docs` and commit the result",
  );
});

test("docs/audit-events.md is what the audit event catalogue generates", () => {
  assert.equal(
    readFileSync(AUDIT_EVENTS_FILE, "utf8"),
    renderAuditEventsDocument(),
    "docs/audit-events.md is out of date with src/model.ts AUDIT_EVENTS: run `npm run docs` and commit the result",
  );
});

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "browser" ? [] : sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

test("no other source file defines a rule's number again", () => {
  const names = Object.keys(rules).filter((name) => typeof (rules as Record<string, unknown>)[name] !== "function" && name !== "RULE_TABLE");
  assert.ok(names.length > 20, `the catalog's constants: ${names.join(", ")}`);
  const redefined = sourceFiles("src")
    .filter((file) => file !== join("src", "rules.ts"))
    .flatMap((file) => {
      const text = readFileSync(file, "utf8");
      return names.filter((name) => new RegExp(`\\b(const|let|var)\\s+${name}\\s*[:=]`).test(text)).map((name) => `${file}: ${name}`);
    });
  assert.deepEqual(redefined, []);
});

test("every row names the spec or DECISIONS row it implements", () => {
  // By its anchor in docs/contract.md; test/citations.test.ts checks that the anchor exists.
  for (const row of rules.RULE_TABLE) assert.match(row.source, /^contract\.md#(spec-\d-\d|d\d+)\b/, row.rule);
});
