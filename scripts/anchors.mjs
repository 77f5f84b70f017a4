/**
 * The anchors of Markdown files, as GitHub makes them: every explicit id (`<a id="d24"></a>`) and
 * one per heading, GitHub's slug of its text (a repeated heading gets -1, -2, …). Headings inside
 * fenced code blocks are not headings. Shared by scripts/cite.mjs (the codemod that turns bare
 * citations into anchors) and test/citations.test.ts (which fails on a citation with no anchor).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, URL } from "node:url";

/** GitHub's heading slug (github-slugger): lowercase, punctuation dropped, each space a hyphen. */
export function slugOf(heading) {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // a link or image shows its text
    .replace(/<[^>]+>/g, "") // inline HTML shows nothing of its tags
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "").replace(/ /g, "-");
}

/** Every anchor of one Markdown text. */
export function anchorsOf(markdown) {
  const anchors = new Set();
  const seen = new Map();
  let fence = null;
  for (const line of markdown.split("\n")) {
    const opening = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (opening) {
      if (fence === null) fence = opening[1][0];
      else if (opening[1][0] === fence) fence = null;
      continue;
    }
    if (fence !== null) continue;
    for (const match of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(match[1]);
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const slug = slugOf(heading[1]);
    const repeats = seen.get(slug) ?? 0;
    seen.set(slug, repeats + 1);
    anchors.add(repeats === 0 ? slug : `${slug}-${repeats}`);
  }
  return anchors;
}

/** The anchors of each Markdown file of a directory (docs/ by default), by file name. */
export function readDocAnchors(dir = new URL("../docs/", import.meta.url)) {
  const path = dir instanceof URL ? fileURLToPath(dir) : dir;
  const byFile = new Map();
  for (const name of readdirSync(path).sort()) {
    if (name.endsWith(".md")) byFile.set(name, anchorsOf(readFileSync(join(path, name), "utf8")));
  }
  return byFile;
}
