/**
 * What the READMEs tell a newcomer to type and count, checked against the code: the quick start
 * leads with dev mode, the SDK README's lists of admin and operator calls are the SDK's, and the
 * documented `npm pack` leaves nothing in the checkout. (The onboarding command itself is run as
 * written by test/cli.test.ts.)
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { operations } from "../packages/client/src/operations.js";

const README = readFileSync("README.md", "utf8");
const CLIENT_README = readFileSync("packages/client/README.md", "utf8");

function section(text: string, heading: string): string {
  const start = text.indexOf(`\n${heading}\n`);
  assert.ok(start >= 0, `no ${heading}`);
  const next = text.indexOf("\n## ", start + heading.length + 1);
  return text.slice(start, next < 0 ? undefined : next);
}

const NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen"].concat(
  ["fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty", "twenty-one", "twenty-two", "twenty-three", "twenty-four", "twenty-five"],
);

/** The method names of the SDK whose operation has `flag`, in the order of operations.ts. */
function methodsWith(flag: "admin" | "operator"): string[] {
  return Object.entries(operations)
    .filter(([, operation]) => (operation as { admin?: true; operator?: true })[flag] === true)
    .map(([name]) => name);
}

/** The backticked names of a parenthesised list that follows `lead`. */
function listAfter(text: string, lead: string): string[] {
  const at = text.indexOf(lead);
  assert.ok(at >= 0, `no "${lead}"`);
  const list = /\(([^)]*)\)/.exec(text.slice(at + lead.length))![1]!;
  return [...list.matchAll(/`([A-Za-z]+)`/g)].map((m) => m[1]!);
}

test("issue 34: the README's quick start leads with `npm run dev`, then the production path", () => {
  const quickStart = section(README, "## Quick start");
  const blocks = [...quickStart.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!.trim());
  assert.deepEqual(blocks, ["npm ci && npm run dev", "npm ci && npm start", "npm ci && npm test"]);
  assert.ok(quickStart.indexOf("npm run dev") < quickStart.indexOf("npm start"));
  const packageJson = JSON.parse(readFileSync("package.json", "utf8")) as { scripts: Record<string, string> };
  for (const script of ["dev", "start", "test", "latch"]) assert.ok(packageJson.scripts[script], `npm run ${script} exists`);
});

test("issue 34: the SDK README's admin and operator call lists are the SDK's, counted", () => {
  const admin = methodsWith("admin");
  const adminLead = "The key goes as `Authorization: Bearer` on the ";
  assert.deepEqual(listAfter(CLIENT_README, adminLead).sort(), [...admin].sort(), "every admin call, and only those");
  assert.ok(CLIENT_README.includes(`${adminLead}${NUMBER_WORDS[admin.length]} admin calls only`), `the count says ${admin.length}`);

  const operator = methodsWith("operator");
  assert.ok(CLIENT_README.includes(`\`operatorKey\` goes on these ${NUMBER_WORDS[operator.length]} calls only`), `the count says ${operator.length}`);
  assert.deepEqual(listAfter(README, "`operatorKey` for the operator calls ").sort(), [...operator].sort(), "the root README lists them all");
  const operatorBlock = /### Operator calls[\s\S]*?```ts\n([\s\S]*?)```/.exec(CLIENT_README)![1]!;
  for (const name of operator) assert.ok(operatorBlock.includes(`operator.${name}(`), `the operator example shows ${name}`);
  const adminBlock = /### Admin calls[\s\S]*?```ts\n([\s\S]*?)```/.exec(CLIENT_README)![1]!;
  for (const name of admin) {
    if (name === "resendVerificationAsAdmin" || name === "requirePasswordChange") continue; // named in the list only
    assert.ok(adminBlock.includes(`${name}(`), `the admin example shows ${name}`);
  }
});

test("issue 34: `npm pack` as documented, and as check:package runs it, leaves no tarball in the checkout", () => {
  for (const [file, text] of [
    ["README.md", README],
    ["packages/client/README.md", CLIENT_README],
  ] as const) {
    const packs = text.split("\n").filter((line) => /\bnpm pack\b/.test(line) && /^\s*(\(|cd |npm )/.test(line));
    assert.ok(packs.length > 0, `${file} shows how to pack`);
    for (const line of packs) assert.match(line, /npm pack --pack-destination \S+/, `${file}: ${line}`);
  }
  const packageJson = JSON.parse(readFileSync("package.json", "utf8")) as { scripts: Record<string, string> };
  assert.equal(packageJson.scripts["check:package"], "node scripts/check-package.mjs");
  const script = readFileSync("scripts/check-package.mjs", "utf8");
  assert.match(script, /"--pack-destination", temp/);
  assert.match(script, /finally \{\n\s+rmSync\(temp, \{ recursive: true, force: true \}\);/);
  assert.doesNotMatch(script, /"--pack"/, "attw does not pack in the checkout");
  // A tarball packed in the checkout anyway (an old habit, a killed run) is not an untracked file.
  assert.equal(
    execFileSync("git", ["check-ignore", "packages/client/latch-client-0.1.0.tgz"], { encoding: "utf8" }).trim(),
    "packages/client/latch-client-0.1.0.tgz",
  );
});
