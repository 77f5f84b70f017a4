/**
 * npm run docs: writes the documents generated from the code, docs/limits.md from src/rules.ts
 * (every number of every rule) and docs/audit-events.md from src/model.ts AUDIT_EVENTS (the audit
 * event catalogue). test/rules.test.ts fails when a committed file and the code disagree.
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { AUDIT_EVENTS } from "../src/model.js";
import { linkCitations, renderLimitsDocument } from "../src/rules.js";

export const LIMITS_FILE = fileURLToPath(new URL("../docs/limits.md", import.meta.url));
export const AUDIT_EVENTS_FILE = fileURLToPath(new URL("../docs/audit-events.md", import.meta.url));

export function renderAuditEventsDocument(): string {
  return [
    "# Audit events",
    "",
    "Every `type` an audit event can have (`GET /auth/admin/audit-log`, the member export), and what it means.",
    "Generated from `AUDIT_EVENTS` in `src/model.ts` by `npm run docs`; `test/rules.test.ts` fails when this file and the code disagree.",
    "",
    "| Type | Meaning |",
    "|---|---|",
    ...Object.entries(AUDIT_EVENTS).map(([type, meaning]) => `| \`${type}\` | ${linkCitations(meaning)} |`),
    "",
  ].join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(LIMITS_FILE, renderLimitsDocument());
  writeFileSync(AUDIT_EVENTS_FILE, renderAuditEventsDocument());
  process.stdout.write(`wrote ${LIMITS_FILE} and ${AUDIT_EVENTS_FILE}\n`);
}
