/**
 * contract.md#issue-28, the deeds in the repo: every decision, spec section and docs anchor the code
 * relies on can be opened. Fails on a bare `D24`, `spec 8.2` or `issue 16` in src/, the client
 * package's code or the API document, and on a citation anywhere (src/, docs/*.md, the READMEs,
 * packages/client, docs/openapi.json, the limits' sources) whose anchor does not exist. The form
 * of a citation is in docs/contract.md's preamble; `node scripts/cite.mjs` rewrites bare ones.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join, relative } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { anchorsOf, readDocAnchors } from "../scripts/anchors.mjs";
import { citationRewriter, rewriteFile } from "../scripts/cite.mjs";
import { RULE_TABLE } from "../src/rules.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const DOCS = join(ROOT, "docs");
const docAnchors = readDocAnchors(DOCS);
const contract = docAnchors.get("contract.md") ?? new Set<string>();
/** The Markdown files whose citations must resolve: docs/*.md, the READMEs. */
const MARKDOWN = [...[...docAnchors.keys()].map((name) => join(DOCS, name)), join(ROOT, "README.md"), join(ROOT, "packages/client/README.md")];
/** The code whose every citation must be an anchor. */
const CODE_DIRS = ["src", "packages/client/src"];
const OPENAPI = join(ROOT, "docs/openapi.json");

function codeFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return codeFiles(path);
    return /\.(ts|mts|js|mjs)$/.test(entry.name) ? [path] : [];
  });
}
const code = CODE_DIRS.flatMap((dir) => codeFiles(join(ROOT, dir)));

const at = (file: string, text: string, index: number) => `${relative(ROOT, file)}:${text.slice(0, index).split("\n").length}`;
const sectionAnchor = (number: string) => `spec-${number.replace(".", "-")}`;

/** Bare citations: what a reader can't open. */
const BARE = [/\bD[1-9]\d?\b/g, /\b[Ss]pec(?: section| §)? \d+(?:\.\d+)?/g, /\b[Ii]ssues? #?\d+/g];

function bareCitations(file: string, text: string): string[] {
  return BARE.flatMap((pattern) => [...text.matchAll(pattern)].map((m) => `${at(file, text, m.index)}: bare "${m[0]}"`));
}

/** The anchors of a Markdown file outside docs/ (the READMEs), read once. */
const otherAnchors = new Map<string, Set<string>>();
function anchorsOfFile(path: string): Set<string> | undefined {
  if (dirname(path) === DOCS) return docAnchors.get(basename(path));
  if (!otherAnchors.has(path)) {
    try {
      otherAnchors.set(path, anchorsOf(readFileSync(path, "utf8")));
    } catch {
      return undefined;
    }
  }
  return otherAnchors.get(path);
}

/** `x.md#anchor` in code or in the API document: `docs/x.md` (the README at the root: `README.md`). */
function codeCitationProblems(file: string, text: string): string[] {
  return [...text.matchAll(/(?<![\w/.-])(?:[\w.-]+\/)*([\w.-]+\.md)#([\w-]+)/g)].flatMap((m) => {
    const [citation, name, anchor] = m as unknown as [string, string, string];
    const target = name === "README.md" && !citation.includes("docs/") ? join(ROOT, name) : join(DOCS, name);
    const anchors = anchorsOfFile(target);
    if (!anchors) return [`${at(file, text, m.index)}: ${citation}: no such file ${relative(ROOT, target)}`];
    return anchors.has(anchor) ? [] : [`${at(file, text, m.index)}: ${citation}: ${relative(ROOT, target)} has no anchor "${anchor}"`];
  });
}

/** In Markdown: links to a .md file or to an anchor of this file, and the decisions and spec sections named in prose. */
function markdownCitationProblems(file: string, text: string): string[] {
  const problems: string[] = [];
  for (const m of text.matchAll(/\]\(([^)\s]*?)(?:#([^)\s]*))?\)/g)) {
    const [, path = "", anchor] = m;
    if (/^[a-z]+:/i.test(path) || (path !== "" && !path.endsWith(".md"))) continue; // another site, or not a Markdown page
    const target = path === "" ? file : join(dirname(file), path);
    const anchors = anchorsOfFile(target);
    if (!anchors) problems.push(`${at(file, text, m.index)}: link to ${path}: no such file`);
    else if (anchor !== undefined && !anchors.has(anchor)) problems.push(`${at(file, text, m.index)}: link to ${path}#${anchor}: no such anchor`);
  }
  for (const m of text.matchAll(/\bD([1-9]\d?)\b/g)) {
    if (!contract.has(`d${m[1]}`)) problems.push(`${at(file, text, m.index)}: ${m[0]} has no section in docs/contract.md`);
  }
  for (const m of text.matchAll(/\b[Ss]pec(?: section| §)? (\d+(?:\.\d+)?)((?:(?:, | and |\/)\d+\.\d+)*)/g)) {
    const numbers = [m[1]!, ...m[2]!.split(/, | and |\//).filter(Boolean)];
    for (const n of numbers) {
      if (!contract.has(sectionAnchor(n))) problems.push(`${at(file, text, m.index)}: spec ${n} has no section in docs/contract.md`);
    }
  }
  return problems;
}

test("docs/contract.md has a section for every decision up to the last, and for the spec sections", () => {
  const decisions = [...contract].filter((a) => /^d\d+$/.test(a)).map((a) => Number(a.slice(1)));
  const last = Math.max(...decisions);
  assert.ok(last >= 30, `decisions in docs/contract.md: ${decisions.join(", ")}`);
  const missing = Array.from({ length: last }, (_, i) => `d${i + 1}`).filter((a) => !contract.has(a));
  assert.deepEqual(missing, [], "decisions with no anchor in docs/contract.md");
  for (const section of ["spec-2-2", "spec-4-6", "spec-8-2"]) assert.ok(contract.has(section), section);
});

test("src/ and the client package's code cite no bare decision, spec section or issue", () => {
  const bare = code.flatMap((file) => bareCitations(file, readFileSync(file, "utf8")));
  assert.deepEqual(bare, [], "cite the anchor instead (docs/contract.md says how; `node scripts/cite.mjs` rewrites comments)");
});

test("the API document cites no bare decision, spec section or issue: it says the behaviour in words", () => {
  const text = readFileSync(OPENAPI, "utf8");
  assert.deepEqual(bareCitations(OPENAPI, text), [], "fix the description in src/http/, then `npm run openapi`");
});

test("every anchor cited by the code and the API document exists", () => {
  const problems = [...code, OPENAPI].flatMap((file) => codeCitationProblems(file, readFileSync(file, "utf8")));
  assert.deepEqual(problems, []);
});

test("every link, decision and spec section cited by docs/*.md and the READMEs exists", () => {
  const problems = MARKDOWN.flatMap((file) => markdownCitationProblems(file, readFileSync(file, "utf8")));
  assert.deepEqual(problems, []);
});

test("every limit names the decision or spec section it comes from, by an anchor that exists", () => {
  const problems = RULE_TABLE.flatMap((row) => {
    const cited = [...row.source.matchAll(/\bcontract\.md#([\w-]+)/g)].map((m) => m[1]!);
    if (cited.length === 0) return [`"${row.rule}": its source cites no section of docs/contract.md`];
    return cited.filter((anchor) => !contract.has(anchor)).map((anchor) => `"${row.rule}": no anchor "${anchor}" in docs/contract.md`);
  });
  assert.deepEqual(problems, []);
});

test("the codemod rewrites comments only, to anchors that exist, and a second run changes nothing", () => {
  const rewrite = citationRewriter(new Set(["d4", "d24", "spec-4-2", "spec-4-4", "issue-16"]));
  const before = [
    "// D24 and DECISIONS D4; spec 4.2, 4.4; issue 16; D99 has no anchor.",
    'const label = "D24 stays: strings are the author\'s";',
    "/** Spec 4.2. */",
    "",
  ].join("\n");
  const once = rewriteFile("example.ts", before, rewrite);
  assert.equal(
    once,
    [
      "// contract.md#d24 and contract.md#d4; contract.md#spec-4-2, contract.md#spec-4-4; contract.md#issue-16; D99 has no anchor.",
      'const label = "D24 stays: strings are the author\'s";',
      "/** contract.md#spec-4-2. */",
      "",
    ].join("\n"),
  );
  assert.equal(rewriteFile("example.ts", once, rewrite), once);
});
