/**
 * `npm run bench:profile` splits a CPU profile by stage (bench/cpuprofile-stages.mjs), matching the
 * built files' paths. A stage that names a Latch file must name one that exists: when the session
 * rules moved to flows/kernel/, the stage kept matching flows/sessions.js and read 0 µs without a word.
 */
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { test } from "node:test";
// @ts-expect-error -- a plain ES module of the bench, without types
import { STAGES } from "../bench/cpuprofile-stages.mjs";

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [],
  );
}

test("every profile stage that names a Latch file matches a file of the build", () => {
  // The URL each source file has in a profile of dist/.
  const builtUrls = sourceFiles("src").map((file) => `file:///srv/latch/dist/${relative("src", file).replace(/\.ts$/, ".js")}`);
  const stages = STAGES as Array<[string, (frame: { url: string; functionName: string }) => boolean]>;
  // A pattern that starts with /dist/ (not a library's own dist/, as cookie/dist/).
  const naming = stages.filter(([, matches]) => /[/|(]\\\/dist\\\//.test(matches.toString()));
  assert.ok(naming.length >= 5, "the stages that name Latch's own files");
  for (const [name, matches] of naming) {
    assert.ok(
      builtUrls.some((url) => matches({ url, functionName: "f" })),
      `the stage "${name}" matches no file of dist/: ${matches.toString()}`,
    );
  }
});
