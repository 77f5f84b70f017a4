/**
 * npm run docs:limits: writes docs/limits.md from src/rules.ts, where every number of every rule
 * lives. test/rules.test.ts fails when the committed file and the code disagree.
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { renderLimitsDocument } from "../src/rules.js";

export const LIMITS_FILE = fileURLToPath(new URL("../docs/limits.md", import.meta.url));

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(LIMITS_FILE, renderLimitsDocument());
  process.stdout.write(`wrote ${LIMITS_FILE}\n`);
}
