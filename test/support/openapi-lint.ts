/**
 * The two OpenAPI linters issue 16 asks for, run in-process on the document's text: Spectral with
 * its `spectral:oas` ruleset and Redocly with its `recommended` rules. Each finding is reduced to
 * one line (`severity rule at pointer: message`) so a failing test prints what to fix.
 */
import { createConfig, lintFromString } from "@redocly/openapi-core";
import { Document, Spectral, type RulesetDefinition } from "@stoplight/spectral-core";
import Parsers from "@stoplight/spectral-parsers";
import { oas } from "@stoplight/spectral-rulesets";

export interface LintFinding {
  severity: "error" | "warn" | "info" | "hint";
  rule: string;
  where: string;
  message: string;
}

export function formatFinding(finding: LintFinding): string {
  return `${finding.severity} ${finding.rule} at ${finding.where}: ${finding.message}`;
}

const SPECTRAL_SEVERITIES = ["error", "warn", "info", "hint"] as const;

export async function lintWithSpectral(text: string, source: string): Promise<LintFinding[]> {
  const spectral = new Spectral();
  spectral.setRuleset({ extends: [[oas as RulesetDefinition, "recommended"]] });
  const results = await spectral.run(new Document(text, Parsers.Json, source));
  return results.map((r) => ({
    severity: SPECTRAL_SEVERITIES[r.severity] ?? "error",
    rule: String(r.code),
    where: "#/" + r.path.map(String).join("/"),
    message: r.message,
  }));
}

export async function lintWithRedocly(text: string, source: string): Promise<LintFinding[]> {
  const config = await createConfig({ extends: ["recommended"] });
  const problems = await lintFromString({ source: text, absoluteRef: source, config });
  return problems.map((p) => ({
    severity: p.severity === "error" ? "error" : "warn",
    rule: p.ruleId,
    where: p.location[0]?.pointer ?? "#/",
    message: p.message,
  }));
}
