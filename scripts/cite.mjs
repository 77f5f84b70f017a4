#!/usr/bin/env node
/**
 * `node scripts/cite.mjs [--check] [files or folders…]`: turns bare citations in code comments
 * into anchors a reader can open (docs/contract.md's preamble says the form):
 *
 *   D24            -> contract.md#d24          (also "DECISIONS D24")
 *   spec 8.2, 4.4  -> contract.md#spec-8-2, contract.md#spec-4-4   (also "spec section 3")
 *   issue 16       -> contract.md#issue-16
 *   decisions #11  -> decisions.md#known-gaps--next-issues, row 11
 *
 * Only comments are touched (found with TypeScript's parser, so strings, templates and regular
 * expressions are left alone), plus the strings docs/limits.md and docs/audit-events.md are
 * generated from, which print each anchor as a link (DOC_STRINGS). A number whose anchor
 * docs/contract.md does not have is left as it is, for test/citations.test.ts to report. Running
 * it twice changes nothing. By default it covers src/, packages/client/src/, scripts/ (this file
 * excepted: its examples stay bare), bench/ and eslint.config.js; --check writes nothing and
 * exits 1 when a file would change.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { fileURLToPath, URL } from "node:url";
import * as prettier from "prettier";
import ts from "typescript";
import { readDocAnchors } from "./anchors.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const DEFAULT_PATHS = ["src", "packages/client/src", "scripts", "bench", "eslint.config.js"];
const CODE_FILE = /\.(ts|mts|cts|js|mjs|cjs)$/;
const SELF = fileURLToPath(import.meta.url);

/** The rewriter for the anchors docs/contract.md has now. */
export function citationRewriter(contractAnchors = readDocAnchors().get("contract.md") ?? new Set()) {
  const cite = (anchor, bare) => (contractAnchors.has(anchor) ? `contract.md#${anchor}` : bare);
  const section = (number) => `spec-${number.replace(".", "-")}`;
  return (text) =>
    text
      .replace(/\b(?:DECISIONS )?D([1-9]\d?)\b/g, (bare, n) => cite(`d${n}`, bare))
      .replace(/\b[Ss]pec(?: section| §)? (\d+(?:\.\d+)?)((?:(?:, | and |\/)\d+\.\d+)*)/g, (bare, first, rest) => {
        const numbers = [first, ...rest.split(/, | and |\//).filter(Boolean)];
        if (!numbers.every((n) => contractAnchors.has(section(n)))) return bare;
        const separators = rest.match(/, | and |\//g) ?? [];
        return numbers.map((n, i) => (i === 0 ? "" : separators[i - 1]) + `contract.md#${section(n)}`).join("");
      })
      .replace(/\b[Ii]ssue #?(\d+)\b/g, (bare, n) => cite(`issue-${n}`, bare))
      .replace(/\bdecisions #(\d+)\b/g, "decisions.md#known-gaps--next-issues, row $1");
}

/** [start, end) of every comment in a source text, in order. */
export function commentRanges(fileName, text) {
  const kind = /\.(ts|mts|cts)$/.test(fileName) ? ts.ScriptKind.TS : ts.ScriptKind.JS;
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, kind);
  const ranges = new Map();
  const add = (list) => {
    for (const range of list ?? []) ranges.set(range.pos, range.end);
  };
  const visit = (node) => {
    add(ts.getLeadingCommentRanges(text, node.getFullStart()));
    add(ts.getTrailingCommentRanges(text, node.getEnd()));
    for (const child of node.getChildren(source)) {
      if (child.kind < ts.SyntaxKind.FirstJSDocNode || child.kind > ts.SyntaxKind.LastJSDocNode) visit(child);
    }
  };
  visit(source);
  return [...ranges].sort(([a], [b]) => a - b);
}

/**
 * Strings that docs/ pages are generated from, which print a `contract.md#…` as a link: the
 * `source` column of src/rules.ts (docs/limits.md) and the meanings of src/model.ts AUDIT_EVENTS
 * (docs/audit-events.md). By file, the test a string literal's property must pass.
 */
const DOC_STRINGS = {
  "src/rules.ts": (property, source) => property.name.getText(source) === "source",
  "src/model.ts": (property) => declarationName(property) === "AUDIT_EVENTS",
};

function declarationName(node) {
  for (let at = node.parent; at; at = at.parent) if (ts.isVariableDeclaration(at)) return at.name.getText();
  return undefined;
}

/** [start, end) of the text (quotes excluded) of each string literal DOC_STRINGS names in a file. */
function docStringRanges(fileName, text, wanted) {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const ranges = [];
  const visit = (node) => {
    if (ts.isPropertyAssignment(node) && ts.isStringLiteralLike(node.initializer) && wanted(node, source)) {
      ranges.push([node.initializer.getStart(source) + 1, node.initializer.getEnd() - 1]);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return ranges;
}

/** The file's text with its citations rewritten. */
export function rewriteFile(fileName, text, rewrite = citationRewriter()) {
  const ranges = commentRanges(fileName, text);
  const wanted = DOC_STRINGS[relative(ROOT, resolve(fileName)).replaceAll("\\", "/")];
  if (wanted) ranges.push(...docStringRanges(fileName, text, wanted));
  ranges.sort(([a], [b]) => b - a); // from the end, so earlier offsets stay valid
  let result = text;
  for (const [start, end] of ranges) result = result.slice(0, start) + rewrite(result.slice(start, end)) + result.slice(end);
  return result;
}

function codeFiles(path) {
  if (!statSync(path).isDirectory()) return CODE_FILE.test(path) && !path.endsWith(".d.ts") && resolve(path) !== SELF ? [path] : [];
  return readdirSync(path, { withFileTypes: true })
    .filter((entry) => entry.name !== "node_modules" && entry.name !== "dist")
    .flatMap((entry) => codeFiles(join(path, entry.name)));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const check = args.includes("--check");
  const paths = args.filter((arg) => arg !== "--check");
  const rewrite = citationRewriter();
  const changed = [];
  for (const file of (paths.length > 0 ? paths : DEFAULT_PATHS.map((p) => join(ROOT, p))).flatMap(codeFiles)) {
    const text = readFileSync(file, "utf8");
    const rewritten = rewriteFile(file, text, rewrite);
    if (rewritten === text) continue;
    // A longer string may push a line past the print width: format what was rewritten, as `npm run format` would.
    const next = await prettier.format(rewritten, { ...(await prettier.resolveConfig(file)), filepath: file });
    if (next === text) continue;
    changed.push(relative(ROOT, file));
    if (!check) writeFileSync(file, next);
  }
  for (const file of changed) console.log(`${check ? "would cite" : "cited"} ${file}`);
  console.log(`${changed.length} file(s) ${check ? "with bare citations" : "rewritten"}`);
  if (check && changed.length > 0) process.exitCode = 1;
}
