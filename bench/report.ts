/**
 * What `npm run bench` prints and writes into docs/performance.md between the bench markers: the
 * scenario table, the PostgreSQL table beside SQLite, the targets, and every answer that was not
 * the status its scenario expects (which also makes the run exit non-zero).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { LoadResult } from "./load-types.js";
import { log, ROOT } from "./servers.js";

export interface Row {
  scenario: string;
  result?: LoadResult;
  value?: string;
  floor?: string;
  peer?: string;
  note?: string;
  /** The status every answer should have, when not a 2xx (a redirect): others are named in the note. */
  expect?: number;
}

export interface Target {
  target: string;
  /** Undefined: the scenario did not run (BENCH_ONLY). */
  measured?: string;
  met?: boolean;
  /** What stands beside the figure: the floor's own figure, the event-loop delay. */
  beside?: string;
}

/** One measured run and the status its every answer should have. */
interface Judged {
  scenario: string;
  result: LoadResult;
  expect: number;
}

const judged: Judged[] = [];
/** Outcomes a status can't show (a redirect that may land on an error page), found wrong after a run. */
const wrongOutcomes: string[] = [];

/** Records an outcome checked after a run: `problem` undefined when it was as it should be. */
export function judgeOutcome(scenario: string, problem: string | undefined): void {
  if (problem !== undefined) wrongOutcomes.push(`${scenario}: ${problem}`);
}

/** Records a run for the final check: any other status, any error or timeout, is a failure. */
export function judge(scenario: string, result: LoadResult, expect: number): LoadResult {
  judged.push({ scenario, result, expect });
  return result;
}

function statusList(result: LoadResult): string {
  return Object.entries(result.statuses)
    .map(([status, count]) => `${status}×${count}`)
    .join(", ");
}

/** One line per run with an unexpected answer; empty when every answer was as expected. */
export function unexpectedAnswers(): string[] {
  return judged
    .flatMap(({ scenario, result, expect }) => {
      const others = Object.entries(result.statuses).filter(([status]) => Number(status) !== expect);
      if (others.length === 0 && result.errors === 0 && result.timeouts === 0) return [];
      return [`${scenario}: expected ${expect}; got ${statusList(result) || "no answers"}; errors ${result.errors}, timeouts ${result.timeouts}`];
    })
    .concat(wrongOutcomes);
}

export function ratio(a: number, b: number): string {
  return b > 0 ? `${(a / b).toFixed(2)}×` : "–";
}

export function percent(a: number, b: number): string {
  return b > 0 ? `${Math.round((100 * a) / b)} %` : "–";
}

export function renderRows(rows: Row[]): string {
  const header = "| Scenario | req/s | p50 ms | p99 ms | vs floor | vs Better Auth | Notes |\n|---|---:|---:|---:|---:|---:|---|";
  const lines = rows.map((r) => {
    const res = r.result;
    const rps = res ? res.rps.toFixed(0) : (r.value ?? "");
    const others = res && (r.expect === undefined ? res.non2xx : res.requests - (res.statuses[String(r.expect)] ?? 0));
    const bad = res && others! + res.errors + res.timeouts > 0 ? `answers ${statusList(res)}, errors ${res.errors}, timeouts ${res.timeouts}` : "";
    return `| ${r.scenario} | ${rps} | ${res ? res.p50.toFixed(2) : ""} | ${res ? res.p99.toFixed(2) : ""} | ${r.floor ?? ""} | ${r.peer ?? ""} | ${[r.note, bad].filter(Boolean).join("; ")} |`;
  });
  return [header, ...lines].join("\n");
}

/** The same scenarios on SQLite and on PostgreSQL, side by side. */
export function renderComparison(pairs: Array<{ scenario: string; sqlite?: LoadResult; postgres?: LoadResult; note?: string }>): string {
  const cell = (r?: LoadResult) => (r ? `${r.rps.toFixed(0)} | ${r.p99.toFixed(2)}` : " | ");
  return [
    "| Scenario | SQLite req/s | SQLite p99 ms | PostgreSQL req/s | PostgreSQL p99 ms | PostgreSQL/SQLite | Notes |",
    "|---|---:|---:|---:|---:|---:|---|",
    ...pairs.map(
      (p) =>
        `| ${p.scenario} | ${cell(p.sqlite)} | ${cell(p.postgres)} | ${p.sqlite && p.postgres ? ratio(p.postgres.rps, p.sqlite.rps) : ""} | ${p.note ?? ""} |`,
    ),
  ].join("\n");
}

export function renderTargets(targets: Target[]): string {
  const verdict = (t: Target) => (t.measured === undefined ? "not run" : t.met ? "met" : "**missed**");
  return [
    "| Target | Measured | | Beside it |",
    "|---|---|---|---|",
    ...targets.map((t) => `| ${t.target} | ${t.measured ?? "–"} | ${verdict(t)} | ${t.beside ?? ""} |`),
  ].join("\n");
}

export function renderUnexpected(lines: string[]): string {
  if (lines.length === 0) return "Every answer had its scenario's expected status; no errors, no timeouts.";
  return ["**Unexpected answers** (the run exits non-zero):", "", ...lines.map((line) => `- ${line}`)].join("\n");
}

export function writeReport(heading: string, body: string): void {
  const file = join(ROOT, "docs/performance.md");
  const run = ["<!-- bench:begin (written by npm run bench) -->", heading, "", body, "<!-- bench:end -->"].join("\n");
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    text = "# Performance\n\n<!-- bench:begin --><!-- bench:end -->\n";
  }
  const begin = text.indexOf("<!-- bench:begin");
  const end = text.indexOf("<!-- bench:end -->");
  text = begin >= 0 && end > begin ? text.slice(0, begin) + run + text.slice(end + "<!-- bench:end -->".length) : `${text}\n${run}\n`;
  writeFileSync(file, text);
  log(`wrote ${file}`);
}
