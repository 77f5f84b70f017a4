/**
 * Issue 18: the layers of docs/architecture.md are enforced by lint. These lint a made-up file in
 * each place through the project's own ESLint config, so they fail if the rule is loosened.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { ESLint } from "eslint";
import ts from "typescript";
import tseslint from "typescript-eslint";

// The made-up files below are in no tsconfig, so they are linted without type information: the
// rules they prove read the syntax only. The type-checked rules have their own tests further down.
const eslint = new ESLint({ overrideConfig: tseslint.configs.disableTypeChecked });

async function layerErrors(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return result!.messages.filter((m) => m.ruleId === "@typescript-eslint/no-restricted-imports").map((m) => m.message);
}

test("an import that runs back up the layers fails lint, value or type alike", async () => {
  const refused: Array<[string, string]> = [
    ["src/store/new.ts", 'import { login } from "../flows/login/login.js";\nexport const x = login;\n'],
    ["src/flows/login/new.ts", 'import { createDeps } from "../../create-deps.js";\nexport const x = createDeps;\n'],
    ["src/flows/new.ts", 'import { createDeps } from "../create-deps.js";\nexport const x = createDeps;\n'],
    [
      "src/flows/kernel/new.ts",
      'import type { FastifyInstance } from "fastify";\nimport { sendPage } from "../../ui/layout.js";\nexport type X = FastifyInstance;\nexport const y = sendPage;\n',
    ],
    ["src/model.ts", 'import type { BotVerifier } from "./providers/bot.js";\nexport type X = BotVerifier;\n'],
    ["src/deps.ts", 'import type { Reauthentication } from "./flows/kernel/reauthentication.js";\nexport type X = Reauthentication;\n'],
    ["src/app.ts", 'import { startDevMode } from "./dev/start.js";\nexport const x = startDevMode;\n'],
    ["src/http/new.ts", 'import { runServer } from "../server.js";\nexport const x = runServer;\n'],
  ];
  for (const [file, code] of refused) {
    const errors = await layerErrors(file, code);
    assert.ok(
      errors.some((e) => /sits below .*docs\/architecture\.md/.test(e)),
      `${file}: ${code}\n${errors.join("\n")}`,
    );
  }
});

test("imports from the same layer or below pass", async () => {
  const allowed: Array<[string, string]> = [
    [
      "src/flows/login/new.ts",
      'import type { Deps } from "../../deps.js";\nimport { rateRules } from "../../rules.js";\nimport { sha256Hex } from "../../security/hashing.js";\nimport { verifyBotChallenge } from "../kernel/guards.js";\nimport { login } from "./login.js";\nexport type X = Deps;\nexport const y = [rateRules, sha256Hex, verifyBotChallenge, login];\n',
    ],
    ["src/dev/new.ts", 'import { html } from "../ui/html.js";\nimport { runServer } from "../server.js";\nexport const x = [html, runServer];\n'],
    ["src/create-deps.ts", 'import { processEmailRequests } from "./flows/kernel/email-requests.js";\nexport const x = processEmailRequests;\n'],
    [
      "src/http/routes/new.ts",
      'import { login } from "../../flows/login/login.js";\nimport { secureAccount } from "../../flows/account/secure-account.js";\nexport const x = [login, secureAccount];\n',
    ],
  ];
  for (const [file, code] of allowed) assert.deepEqual(await layerErrors(file, code), [], `${file}: ${code}`);
});

test("issue 28: the flows are feature slices over a kernel: a slice imports the kernel and itself, never another slice; the kernel imports no slice", async () => {
  const refused: Array<[string, string]> = [
    ["src/flows/passkeys/new.ts", 'import { reauthenticate } from "../account/self-service.js";\nexport const x = reauthenticate;\n'],
    ["src/flows/login/new.ts", 'import type { TwoFactorSetup } from "../two-factor/two-factor.js";\nexport type X = TwoFactorSetup;\n'],
    ["src/flows/kernel/new.ts", 'import { login } from "../login/login.js";\nexport const x = login;\n'],
  ];
  for (const [file, code] of refused) {
    const errors = await layerErrors(file, code);
    assert.ok(
      errors.some((e) => /imports the kernel and itself only/.test(e)),
      `${file}: ${code}\n${errors.join("\n")}`,
    );
  }
  // Every flow lives in a slice the rule knows: nothing sits in src/flows/ itself, and no folder escapes the rule.
  const { readdirSync, statSync } = await import("node:fs");
  const lintConfig = "../eslint.config.js"; // plain JS: read at run time, not typed
  const { FLOW_SLICES } = (await import(lintConfig)) as { FLOW_SLICES: string[] };
  const entries = readdirSync("src/flows");
  assert.deepEqual(
    entries.filter((name) => !statSync(`src/flows/${name}`).isDirectory()),
    [],
    "files in src/flows/ outside every slice",
  );
  assert.deepEqual(entries.filter((name) => statSync(`src/flows/${name}`).isDirectory()).sort(), ["kernel", ...FLOW_SLICES].sort());
});

test("issue 28: deps.store inside a transaction's callback fails lint; the transaction's own store passes", async () => {
  const lint = async (body: string) => {
    const code = `import type { Deps } from "../../deps.js";\nexport async function f(deps: Deps) {\n  ${body}\n}\n`;
    const [result] = await eslint.lintText(code, { filePath: "src/flows/account/new.ts" });
    return result!.messages.filter((m) => m.ruleId === "no-restricted-syntax").map((m) => m.message);
  };
  const refused = await lint('await deps.store.transaction(async (tx) => { await deps.store.members.findMemberById("t", 1); return tx; });');
  assert.ok(
    refused.some((m) => /use the transaction's store \(tx\)/.test(m)),
    refused.join("\n"),
  );
  assert.deepEqual(await lint('await deps.store.transaction(async (tx) => tx.members.findMemberById("t", 1));'), []);
});

test("hosted pages decide by an error's code, never by its words (issue 18)", async () => {
  const { readdirSync, readFileSync } = await import("node:fs");
  const { formErrorsOf } = await import("../src/ui/forms.js");
  const { AuthError } = await import("../src/errors.js");
  const [reworded] = formErrorsOf(new AuthError("email_not_verified", { message: "Any other words." }), ["email"]);
  assert.equal(reworded!.code, "email_not_verified", "the form error carries the code the page decides by");

  const readsWords = /\.test\([^)]*\bmessage\b|\bmessage\s*[!=]==|[!=]==\s*[A-Za-z_.]*MESSAGE\b|\bmessage\.(includes|startsWith|endsWith|match)\(/;
  const offenders = ["src/ui", "src/ui/pages"].flatMap((dir) =>
    readdirSync(dir)
      .filter((name) => name.endsWith(".ts"))
      .flatMap((name) => {
        const lines = readFileSync(`${dir}/${name}`, "utf8").split("\n");
        return lines.flatMap((line, i) => (readsWords.test(line) ? [`${dir}/${name}:${i + 1}: ${line.trim()}`] : []));
      }),
  );
  assert.deepEqual(offenders, []);
});

test("lint checks formatting: Prettier is part of npm run lint, and an unformatted file fails it (issue 18)", async () => {
  const { readFileSync } = await import("node:fs");
  const prettier = await import("prettier");
  const scripts = (JSON.parse(readFileSync("package.json", "utf8")) as { scripts: Record<string, string> }).scripts;
  assert.match(scripts.lint!, /prettier --check/);
  const options = { ...(await prettier.resolveConfig("src/app.ts")), filepath: "src/app.ts" };
  assert.equal(await prettier.check("export const x = {a:1,\n  b:2}\n", options), false, "an unformatted file");
  assert.equal(await prettier.check(readFileSync("src/app.ts", "utf8"), options), true, "a file of the tree");
});

test("what differs between SQLite and PostgreSQL is decided in src/store/dialects.ts only", async () => {
  const { readdirSync, readFileSync } = await import("node:fs");
  const branches = /\bdialect\s*[!=]==|["']postgres["']|["']sqlite["']|\.forUpdate\(|\.skipLocked\(/;
  const offenders = readdirSync("src", { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".ts") && name !== "store/dialects.ts")
    .flatMap((name) => {
      const lines = readFileSync(`src/${name}`, "utf8").split("\n");
      return lines.flatMap((line, i) => (branches.test(line) ? [`src/${name}:${i + 1}: ${line.trim()}`] : []));
    });
  assert.deepEqual(offenders, []);
});

const TYPED_RULES = [
  "@typescript-eslint/no-floating-promises",
  "@typescript-eslint/no-misused-promises",
  "@typescript-eslint/switch-exhaustiveness-check",
  "@typescript-eslint/no-unnecessary-type-assertion",
  "@typescript-eslint/await-thenable",
  "@typescript-eslint/only-throw-error",
  "@typescript-eslint/no-base-to-string",
];

test("issue 28: lint is type-aware in every TypeScript file set, and the type-checked rules are errors", async () => {
  const typed = new ESLint();
  const samples = [
    "src/app.ts",
    "src/ui/browser/hosted.ts",
    "packages/client/src/client.ts",
    "test/architecture.test.ts",
    "scripts/openapi.ts",
    "bench/run.ts",
  ];
  for (const file of samples) {
    const config = (await typed.calculateConfigForFile(file)) as {
      languageOptions: { parserOptions: { projectService?: unknown } };
      rules: Record<string, [number, ...unknown[]]>;
    };
    assert.ok(config.languageOptions.parserOptions.projectService, `${file}: linted without types`);
    for (const rule of TYPED_RULES) assert.equal(config.rules[rule]?.[0], 2, `${file}: ${rule} is not an error`);
  }
  // And they see types: new text for a file of the SDK (the smallest program) with a promise nobody
  // awaits and a switch whose default stands in for a member of the union.
  const code = `type Kind = "a" | "b";
export function pick(kind: Kind): number {
  switch (kind) {
    case "a":
      return 1;
    default:
      return 2;
  }
}
async function later(): Promise<void> {}
export function run(): void {
  later();
}
`;
  const [result] = await typed.lintText(code, { filePath: "packages/client/src/errors.ts" });
  const fired = result!.messages.map((m) => m.ruleId).sort();
  assert.deepEqual(fired, ["@typescript-eslint/no-floating-promises", "@typescript-eslint/switch-exhaustiveness-check"]);
});

test("issue 28: every TypeScript file is in the program of its nearest tsconfig.json, which typed lint reads", () => {
  // src/ui/browser/tsconfig.json inherited the root's `exclude` of its own folder: it checked two
  // shared files and none of the browser scripts, and typecheck passed without looking at them.
  const programs = new Map<string, Set<string>>();
  const filesOf = (configPath: string): Set<string> => {
    let files = programs.get(configPath);
    if (!files) {
      const parsed = ts.getParsedCommandLineOfConfigFile(configPath, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
      files = new Set(parsed?.fileNames.map((name) => resolve(name)));
      programs.set(configPath, files);
    }
    return files;
  };
  const outside = ["src", "test", "scripts", "bench", "packages/client/src"].flatMap((root) =>
    readdirSync(root, { recursive: true, encoding: "utf8" })
      .filter((name) => name.endsWith(".ts"))
      .map((name) => resolve(join(root, name)))
      .filter((file) => {
        const configPath = ts.findConfigFile(dirname(file), ts.sys.fileExists);
        return configPath === undefined || !filesOf(resolve(configPath)).has(file);
      }),
  );
  assert.deepEqual(outside, []);
});
