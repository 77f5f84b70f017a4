/**
 * The automated accessibility check of issue 7: axe-core run inside the page, failing on any
 * violation of impact serious or critical. The pages' CSP (script-src 'self', or 'none' on the dev
 * inbox) would refuse a <script> tag, so axe's source is evaluated through the DevTools protocol
 * (page.evaluate), which the page's CSP does not govern; CSP stays on for everything the page does.
 */
import assert from "node:assert/strict";
import axe from "axe-core";
import type { Page } from "playwright-core";

const SERIOUS = new Set(["serious", "critical"]);

export interface A11yViolation {
  id: string;
  impact: string | null;
  help: string;
  helpUrl: string;
  nodes: { target: string; html: string; summary: string }[];
}

export interface A11yOptions {
  /** CSS selectors axe checks; the whole page unless told. */
  include?: string[];
  /** CSS selectors axe leaves out (a third-party widget reported separately, never the page's own markup). */
  exclude?: string[];
}

/** Every violation axe finds, any impact. */
export async function findA11yViolations(page: Page, options: A11yOptions = {}): Promise<A11yViolation[]> {
  const loaded = await page.evaluate("typeof window.axe === 'object'");
  if (!loaded) await page.evaluate(axe.source);
  const context = { include: options.include ?? ["html"], exclude: options.exclude ?? [] };
  const results = await page.evaluate(
    (runContext) => (globalThis as unknown as { axe: typeof axe }).axe.run(runContext, { resultTypes: ["violations"] }),
    context,
  );
  return results.violations.map((violation) => ({
    id: violation.id,
    impact: violation.impact ?? null,
    help: violation.help,
    helpUrl: violation.helpUrl,
    nodes: violation.nodes.map((node) => ({ target: node.target.join(" "), html: node.html, summary: node.failureSummary ?? "" })),
  }));
}

const NODES_SHOWN = 5;

/** One block per violation: id, impact, help, and its first few nodes with axe's reason. */
export function describeViolations(violations: A11yViolation[], nodesShown = NODES_SHOWN): string {
  return violations
    .map((v) => {
      const nodes = v.nodes.slice(0, nodesShown).map((n) => `    at ${n.target}: ${n.html}\n      ${n.summary.replace(/\n/g, "\n      ")}`);
      if (v.nodes.length > nodesShown) nodes.push(`    ... and ${v.nodes.length - nodesShown} more node(s)`);
      return `${v.id} (${v.impact}): ${v.help} [${v.helpUrl}]\n${nodes.join("\n")}`;
    })
    .join("\n");
}

export function isSerious(violation: A11yViolation): boolean {
  return violation.impact !== null && SERIOUS.has(violation.impact);
}

/** Fails listing id, impact and the offending nodes of each serious or critical violation. */
export async function expectNoSeriousA11yViolations(page: Page, options: A11yOptions = {}): Promise<A11yViolation[]> {
  const violations = await findA11yViolations(page, options);
  const serious = violations.filter(isSerious);
  assert.equal(serious.length, 0, `axe-core: ${serious.length} serious or critical violation(s) on ${page.url()}:\n${describeViolations(serious)}`);
  return violations;
}
