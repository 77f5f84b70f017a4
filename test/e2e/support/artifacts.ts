/**
 * Screenshots of each step (issue 7), kept as test artefacts: test-artifacts/e2e/<suite>/<NN>-<step>.png
 * (gitignored; CI can upload the folder). A suite's folder is emptied when the suite starts, so
 * what is there is always one run of it, numbered in the order the steps happened.
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Page } from "playwright-core";

export const ARTIFACTS_ROOT = resolve("test-artifacts", "e2e");

let current: { dir: string; step: number } | undefined;

function toFileName(text: string): string {
  const name = text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
  if (!name) throw new Error(`a step name needs letters or digits (got "${text}")`);
  return name;
}

/** Empties and creates the suite's folder; saveStep writes there from now on. Returns the folder. */
export function startArtifacts(suite: string): string {
  const dir = join(ARTIFACTS_ROOT, toFileName(suite));
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  current = { dir, step: 0 };
  return dir;
}

/** A full-page screenshot named after the step, numbered across the suite. Returns its path. */
export async function saveStep(page: Page, name: string): Promise<string> {
  if (!current) throw new Error("saveStep before startArtifacts: use the suite helper (test/e2e/support/suite.ts)");
  current.step += 1;
  const path = join(current.dir, `${String(current.step).padStart(2, "0")}-${toFileName(name)}.png`);
  await page.screenshot({ path, fullPage: true, animations: "disabled" });
  return path;
}

/** A text artefact beside the screenshots (an axe report, say), written as is. Returns its path. */
export function saveArtifact(fileName: string, content: string): string {
  if (!current) throw new Error("saveArtifact before startArtifacts: use the suite helper (test/e2e/support/suite.ts)");
  const path = join(current.dir, fileName);
  writeFileSync(path, content);
  return path;
}
