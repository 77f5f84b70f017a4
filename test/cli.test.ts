/** The `latch` CLI (D3) as a real child process on a real database, then used by the HTTP API. */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { test, type TestContext } from "node:test";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { loadConfig } from "../src/config.js";
import { cliCommandFor } from "../src/dev/start.js";
import { describeDuration, WEBHOOK_SECRET_ROTATION_WINDOW_MS } from "../src/rules.js";
import { operatorHeaders } from "./support/flows.js";
import { createHarness, deliverWebhooks, post, registerVerifiedMember } from "./support/harness.js";
import { createTestSchema, TEST_DATABASE_URL } from "./support/postgres.js";

const run = promisify(execFile);
const SECRETS_KEY = "11".repeat(32);

async function latch(
  dataDir: string,
  args: string[],
  keys: Record<string, string> = { SECRETS_KEY },
): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env, DATABASE_URL: `sqlite:${join(dataDir, "latch.db")}`, SECRETS_KEY_PREVIOUS: "", LOG_LEVEL: "warn", ...keys };
  try {
    const { stdout, stderr } = await run(process.execPath, ["--import", "tsx", "src/cli/main.ts", ...args], { env });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const HOOKS = {
  emailVerificationWebhook: "https://hooks.example.net/verify",
  passwordResetWebhook: "https://hooks.example.net/reset",
  magicLoginWebhook: "https://hooks.example.net/magic",
};

function tempDataDir(t: TestContext): string {
  const dataDir = mkdtempSync(join(tmpdir(), "latch-cli-"));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  return dataDir;
}

test("latch tenant create|show|update|rotate-key|rotate-webhook-secret drive the same store as the API", async (t) => {
  const dataDir = tempDataDir(t);
  const settings = JSON.stringify({ ...HOOKS, botProtection: { provider: "turnstile", secretKey: "cli-bot-secret" } });

  const created = await latch(dataDir, ["tenant", "create", "--domain", "Shop.Example.com", "--settings", settings]);
  assert.equal(created.code, 0, created.stderr);
  const tenant = JSON.parse(created.stdout) as { domain: string; applicationId: string; webhookSecret: string; internalApiKey: string };
  assert.equal(tenant.domain, "shop.example.com");
  assert.match(tenant.webhookSecret, /^whsec_/);
  assert.ok(tenant.internalApiKey);

  const duplicate = await latch(dataDir, ["tenant", "create", "--domain", "shop.example.com", "--settings", settings]);
  assert.equal(duplicate.code, 1);
  assert.match(duplicate.stderr, /conflict/);

  const invalid = await latch(dataDir, ["tenant", "update", "shop.example.com", "--settings", '{"sessionTier":"2y"}']);
  assert.equal(invalid.code, 1);
  assert.match(invalid.stderr, /validation_failed/);

  const updated = await latch(dataDir, ["tenant", "update", "shop.example.com", "--settings", '{"sessionTier":"7d"}']);
  assert.equal(updated.code, 0, updated.stderr);
  const shown = await latch(dataDir, ["tenant", "show", "shop.example.com"]);
  const view = JSON.parse(shown.stdout) as { settings: { sessionTier: string; botProtection: Record<string, unknown> } };
  assert.equal(view.settings.sessionTier, "7d");
  assert.equal(view.settings.botProtection.secretKey, undefined, "show leaves secrets out");
  assert.doesNotMatch(shown.stdout, /cli-bot-secret|whsec_|latch_/);

  const rotated = await latch(dataDir, ["tenant", "rotate-key", tenant.applicationId]);
  const { internalApiKey: newKey } = JSON.parse(rotated.stdout) as { internalApiKey: string };
  assert.notEqual(newKey, tenant.internalApiKey);
  const secret = await latch(dataDir, ["tenant", "rotate-webhook-secret", "shop.example.com"]);
  const rotatedSecret = JSON.parse(secret.stdout) as { webhookSecret: string; previousSecretExpiresAt: string };
  assert.match(rotatedSecret.webhookSecret, /^whsec_/);
  assert.match(
    rotatedSecret.previousSecretExpiresAt,
    /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/,
    "until when the old secret signs, as the API's ISO 8601 times",
  );
  assert.ok(!secret.stdout.includes(tenant.webhookSecret), "the old secret is not shown again");
  const help = await latch(dataDir, ["--help"]);
  assert.match(
    help.stderr,
    new RegExp(`rotate-webhook-secret <domain>\\s+\\(the old secret signs too for ${describeDuration(WEBHOOK_SECRET_ROTATION_WINDOW_MS)}`),
  );

  assert.equal((await latch(dataDir, ["tenant", "frobnicate"])).code, 2, "unknown command is a usage error");

  // The HTTP API on the same database sees the CLI's tenant and only the rotated key.
  const h = await createHarness({ dataDir, domain: "other.example.com" });
  t.after(() => h.close());
  const lockWith = (key: string) =>
    post(h, "/auth/lock-account", { recordId: "123456789012345", action: "lock" }, { domain: "shop.example.com", headers: { authorization: `Bearer ${key}` } });
  assert.equal((await lockWith(tenant.internalApiKey)).statusCode, 401, "the old key stopped working");
  assert.equal((await lockWith(newKey)).statusCode, 404, "the new key is accepted; the member does not exist");

  // The old webhook secret is kept sealed until the time the CLI printed, a window after the rotation.
  const row = await h.db
    .selectFrom("tenants")
    .select(["webhook_previous_secret_enc", "webhook_previous_secret_expires_at", "updated_at"])
    .where("domain", "=", "shop.example.com")
    .executeTakeFirstOrThrow();
  assert.equal(h.deps.secrets.open(row.webhook_previous_secret_enc!), tenant.webhookSecret);
  assert.equal(row.webhook_previous_secret_expires_at, Date.parse(rotatedSecret.previousSecretExpiresAt));
  assert.equal(row.webhook_previous_secret_expires_at - row.updated_at, WEBHOOK_SECRET_ROTATION_WINDOW_MS);
});

test("latch secrets reseal: counts per kind, never values; idempotent; unreadable values kept and exit 1", async (t) => {
  const dataDir = tempDataDir(t);
  const NEW_KEY = "22".repeat(32);
  const settings = JSON.stringify({ ...HOOKS, botProtection: { provider: "turnstile", secretKey: "cli-bot-secret" } });
  assert.equal((await latch(dataDir, ["tenant", "create", "--domain", "shop.example.com", "--settings", settings])).code, 0);
  // A rotation keeps the old webhook secret for its window: sealed too, so resealed too.
  assert.equal((await latch(dataDir, ["tenant", "rotate-webhook-secret", "shop.example.com"])).code, 0);
  const countsOf = (stdout: string) => JSON.parse(stdout) as Record<string, { resealed: number; current: number; unreadable: number }>;

  const rotated = await latch(dataDir, ["secrets", "reseal"], { SECRETS_KEY: NEW_KEY, SECRETS_KEY_PREVIOUS: SECRETS_KEY });
  assert.equal(rotated.code, 0, rotated.stderr);
  const report = countsOf(rotated.stdout);
  assert.deepEqual(Object.keys(report).sort(), [
    "botSecrets",
    "connectionSecrets",
    "importedHashParams",
    "outboxPayloads",
    "pendingTotpSecrets",
    "previousWebhookSecrets",
    "signingKeys",
    "totpSecrets",
    "webhookSecrets",
  ]);
  assert.equal(report.webhookSecrets!.resealed, 1);
  assert.equal(report.previousWebhookSecrets!.resealed, 1);
  assert.equal(report.botSecrets!.resealed, 1);
  assert.doesNotMatch(rotated.stdout + rotated.stderr, /cli-bot-secret|whsec_|v2\./, "counts only");

  const again = countsOf((await latch(dataDir, ["secrets", "reseal"], { SECRETS_KEY: NEW_KEY })).stdout);
  assert.deepEqual(
    [again.webhookSecrets!.resealed, again.webhookSecrets!.current, again.previousWebhookSecrets!.current, again.botSecrets!.current],
    [0, 1, 1, 1],
    "the new key alone opens all; nothing left to do",
  );

  const wrongKey = await latch(dataDir, ["secrets", "reseal"], { SECRETS_KEY });
  assert.equal(wrongKey.code, 1, "values no key opens make the run fail");
  const unreadable = countsOf(wrongKey.stdout);
  assert.deepEqual([unreadable.webhookSecrets!.unreadable, unreadable.previousWebhookSecrets!.unreadable, unreadable.botSecrets!.unreadable], [1, 1, 1]);
  assert.match(wrongKey.stderr, /left in place/);
  const kept = countsOf((await latch(dataDir, ["secrets", "reseal"], { SECRETS_KEY: NEW_KEY })).stdout);
  assert.equal(kept.webhookSecrets!.current, 1, "the unreadable run deleted and changed nothing");

  const badPrevious = await latch(dataDir, ["secrets", "reseal"], { SECRETS_KEY: NEW_KEY, SECRETS_KEY_PREVIOUS: "not-a-key" });
  assert.equal(badPrevious.code, 1);
  assert.match(badPrevious.stderr, /SECRETS_KEY_PREVIOUS \(key 1\) must be 32 bytes/);
  assert.equal((await latch(dataDir, ["secrets", "frobnicate"])).code, 2, "unknown secrets command is a usage error");
});

test("D23: latch tenant list|delete; stdout is JSON and nothing else, for results, errors, usage and the documented npm call", async (t) => {
  const dataDir = tempDataDir(t);
  const settings = JSON.stringify({ ...HOOKS, botProtection: { provider: "none" } });
  for (const domain of ["b.example.com", "a.example.com", "c.example.com"]) {
    assert.equal((await latch(dataDir, ["tenant", "create", "--domain", domain, "--settings", settings])).code, 0);
  }
  type Page = { tenants: { domain: string }[]; nextCursor: string | null };
  const first = JSON.parse((await latch(dataDir, ["tenant", "list", "--limit", "2"])).stdout) as Page;
  assert.deepEqual(
    first.tenants.map((x) => x.domain),
    ["a.example.com", "b.example.com"],
  );
  const rest = JSON.parse((await latch(dataDir, ["tenant", "list", "--cursor", first.nextCursor!])).stdout) as Page;
  assert.deepEqual([rest.tenants.map((x) => x.domain), rest.nextCursor], [["c.example.com"], null]);

  const unconfirmed = await latch(dataDir, ["tenant", "delete", "b.example.com"]);
  assert.deepEqual([unconfirmed.code, unconfirmed.stdout], [2, ""]);
  const mistyped = await latch(dataDir, ["tenant", "delete", "b.example.com", "--confirm", "c.example.com"]);
  assert.deepEqual([mistyped.code, mistyped.stdout], [1, ""]);
  const [databaseLine, errorLine, ...more] = mistyped.stderr.trim().split("\n");
  assert.deepEqual([databaseLine, more], [`latch: database sqlite:${join(dataDir, "latch.db")}`, []], "the database it used, then the error");
  assert.equal((JSON.parse(errorLine!) as { code: string }).code, "validation_failed", "errors are JSON too, on stderr, one line");
  const deleted = await latch(dataDir, ["tenant", "delete", "b.example.com", "--confirm", "b.example.com"]);
  assert.equal(deleted.code, 0, deleted.stderr);
  assert.deepEqual(JSON.parse(deleted.stdout), {
    success: true,
    domain: "b.example.com",
    applicationId: (JSON.parse(deleted.stdout) as { applicationId: string }).applicationId,
    applicationDeleted: true,
  });
  const unknown = await latch(dataDir, ["tenant", "show", "b.example.com"]);
  assert.deepEqual([unknown.code, unknown.stdout, errorBodyOf(unknown.stderr).code], [1, "", "unknown_tenant"]);

  const help = await latch(dataDir, ["--help"]);
  assert.deepEqual([help.code, help.stdout], [0, ""]);
  assert.match(help.stderr, /Usage:/);

  // The call the README documents: npm's banner would break `| jq`; -s keeps stdout to the result.
  const env = { ...process.env, DATABASE_URL: `sqlite:${join(dataDir, "latch.db")}`, SECRETS_KEY, SECRETS_KEY_PREVIOUS: "", LOG_LEVEL: "warn" };
  const { stdout } = await run("npm", ["run", "-s", "latch", "--", "tenant", "list"], { env });
  assert.deepEqual(
    (JSON.parse(stdout) as Page).tenants.map((x) => x.domain),
    ["a.example.com", "c.example.com"],
  );
});

/** The D4 body a failed command wrote: the last line of stderr (log lines, JSON too, may come before it). */
function errorBodyOf(stderr: string): Record<string, unknown> {
  const lines = stderr.trim().split("\n");
  return JSON.parse(lines[lines.length - 1]!) as Record<string, unknown>;
}

test("issue 29: every failure is the D4 error body on stderr, one line, nothing on stdout, exit 1 (2 for usage)", async (t) => {
  const dataDir = tempDataDir(t);
  const settings = JSON.stringify({ ...HOOKS, botProtection: { provider: "none" } });
  assert.equal((await latch(dataDir, ["tenant", "create", "--domain", "shop.example.com", "--settings", settings])).code, 0);
  const cases: { args: string[]; env?: Record<string, string>; exit: number; code: string; field?: string }[] = [
    { args: [], exit: 2, code: "validation_failed", field: "command" },
    { args: ["frobnicate"], exit: 2, code: "validation_failed", field: "command" },
    { args: ["tenant", "frobnicate"], exit: 2, code: "validation_failed", field: "command" },
    { args: ["tenant", "list", "--bogus"], exit: 2, code: "validation_failed", field: "options" },
    { args: ["tenant", "list", "--limit", "many"], exit: 2, code: "validation_failed", field: "--limit" },
    { args: ["tenant", "show"], exit: 2, code: "validation_failed", field: "<domain>" },
    { args: ["tenant", "create", "--domain", "x.example.com", "--settings", "{"], exit: 2, code: "validation_failed", field: "--settings" },
    { args: ["tenant", "show", "nobody.example.com"], exit: 1, code: "unknown_tenant" },
    { args: ["tenant", "rotate-key", "app_unknown"], exit: 1, code: "not_found" },
    { args: ["tenant", "update", "shop.example.com", "--settings", '{"sessionTier":"2y"}'], exit: 1, code: "validation_failed" },
    { args: ["tenant", "list"], env: { SECRETS_KEY: "not-a-key" }, exit: 1, code: "validation_failed" },
    { args: ["tenant", "list"], env: { DATABASE_URL: `sqlite:${join(dataDir, "missing.db")}` }, exit: 1, code: "validation_failed" },
  ];
  for (const c of cases) {
    const result = await latch(dataDir, c.args, { SECRETS_KEY, ...c.env });
    const what = `latch ${c.args.join(" ")}: ${result.stderr}`;
    assert.deepEqual([result.code, result.stdout], [c.exit, ""], what);
    assert.doesNotMatch(result.stderr, /\n\s+at /, `no stack trace: ${what}`);
    const body = errorBodyOf(result.stderr);
    assert.deepEqual([body.success, body.code, typeof body.message], [false, c.code, "string"], what);
    if (c.field) assert.equal((body.details as { field: string }[])[0]!.field, c.field, what);
  }

  // A store error: the schema is not there (an empty file, migrations off).
  writeFileSync(join(dataDir, "empty.db"), "");
  const unmigrated = await latch(dataDir, ["tenant", "list"], { SECRETS_KEY, DATABASE_URL: `sqlite:${join(dataDir, "empty.db")}`, MIGRATE_ON_START: "false" });
  assert.deepEqual([unmigrated.code, unmigrated.stdout, errorBodyOf(unmigrated.stderr).code], [1, "", "unavailable"], unmigrated.stderr);
  assert.match(String(errorBodyOf(unmigrated.stderr).message), /latch migrate/);
});

test("issue 29: each command prints what the operator API answers for the same call (deliveries as {deliveries}, ISO times)", async (t) => {
  const dataDir = tempDataDir(t);
  const h = await createHarness({ dataDir });
  t.after(() => h.close());
  await registerVerifiedMember(h, "ada@example.org");
  await deliverWebhooks(h);
  const api = async (url: string) => (await h.app.inject({ method: "GET", url, headers: operatorHeaders() })).json<unknown>();
  const cli = async (args: string[]) => {
    const result = await latch(dataDir, args);
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as unknown;
  };
  const domain = h.tenant.domain;
  const deliveries = (await cli(["tenant", "deliveries", domain])) as { deliveries: { createdAt: string }[] };
  assert.deepEqual(deliveries, await api(`/operator/tenants/${domain}/webhook-deliveries`));
  assert.ok(deliveries.deliveries.length > 0);
  assert.match(deliveries.deliveries[0]!.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, "the one time format, not epoch milliseconds");
  assert.deepEqual(await cli(["tenant", "deliveries", domain, "--limit", "1"]), await api(`/operator/tenants/${domain}/webhook-deliveries?limit=1`));
  assert.deepEqual(await cli(["tenant", "list"]), await api("/operator/tenants"));
  assert.deepEqual(await cli(["tenant", "show", domain]), await api(`/operator/tenants/${domain}`));
});

/** The CLI as a process in `cwd`, with exactly `env` on top of PATH: what a reader's shell runs, from any directory. */
async function latchIn(cwd: string, args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const tsx = pathToFileURL(resolve("node_modules/tsx/dist/esm/index.mjs")).href;
  const base = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", LOG_LEVEL: "warn" };
  try {
    const { stdout, stderr } = await run(process.execPath, ["--import", tsx, resolve("src/cli/main.ts"), ...args], { cwd, env: { ...base, ...env } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

test("issue 34 item 4: every command names its database on stderr, and an unknown tenant gets an operator's answer naming it", async (t) => {
  const dataDir = tempDataDir(t);
  const file = join(dataDir, "latch.db");
  const settings = JSON.stringify({ ...HOOKS, botProtection: { provider: "none" } });
  const commands = [
    ["tenant", "create", "--domain", "shop.example.com", "--settings", settings],
    ["tenant", "list"],
    ["tenant", "show", "shop.example.com"],
    ["tenant", "deliveries", "shop.example.com"],
    ["connection", "list", "--tenant", "shop.example.com"],
    ["oauth-client", "list", "--tenant", "shop.example.com"],
    ["secrets", "reseal"],
    ["migrate"],
  ];
  for (const args of commands) {
    const result = await latch(dataDir, args);
    assert.equal(result.code, 0, `latch ${args.join(" ")}: ${result.stderr}`);
    assert.ok(result.stderr.split("\n").includes(`latch: database sqlite:${file}`), `latch ${args.join(" ")}: ${result.stderr}`);
    JSON.parse(result.stdout); // stdout is still the result alone
  }

  const unknown = await latch(dataDir, ["tenant", "show", "Unknown.Example.com"]);
  assert.deepEqual([unknown.code, unknown.stdout], [1, ""]);
  const body = errorBodyOf(unknown.stderr);
  assert.equal(body.code, "unknown_tenant", "the API's code is kept");
  assert.equal(body.message, `No tenant with domain unknown.example.com in sqlite:${file}; list them with \`latch tenant list\`.`);
  for (const args of [
    ["tenant", "update", "gone.example.com", "--settings", "{}"],
    ["tenant", "rotate-webhook-secret", "gone.example.com"],
    ["connection", "list", "--tenant", "gone.example.com"],
    ["oauth-client", "list", "--tenant", "gone.example.com"],
  ]) {
    const result = await latch(dataDir, args);
    assert.equal(result.code, 1, result.stderr);
    assert.match(
      String(errorBodyOf(result.stderr).message),
      /^No tenant with domain gone\.example\.com in sqlite:.*latch\.db; list them with `latch tenant list`\.$/,
      args.join(" "),
    );
  }
  const noApplication = errorBodyOf((await latch(dataDir, ["tenant", "rotate-key", "app_unknown"])).stderr);
  assert.deepEqual(
    [noApplication.code, noApplication.message],
    ["not_found", `No application app_unknown in sqlite:${file}; \`latch tenant list\` shows each tenant's applicationId.`],
  );

  // The default, with DATABASE_URL unset, says it is the default and names dev mode's file.
  const unset = await latchIn(dataDir, ["tenant", "list"], { SECRETS_KEY });
  assert.match(
    unset.stderr,
    new RegExp(`^latch: database sqlite:${join(dataDir, "data", "latch.db")} \\(DATABASE_URL is unset: .*sqlite:\\./data/dev\\.db\\)$`, "m"),
  );
});

test("issue 34 item 4: on PostgreSQL the database line and errors name the URL without its password or secret parameters", async (t) => {
  const dataDir = tempDataDir(t);
  // Nothing listens on port 1: the command fails as unavailable, after naming the database.
  const url = "postgres://latch:hunter2-password@127.0.0.1:1/latch?sslmode=disable&sslpassword=hunter3-password";
  const refused = await latch(dataDir, ["tenant", "list"], { SECRETS_KEY, DATABASE_URL: url });
  assert.equal(refused.code, 1, refused.stderr);
  assert.match(refused.stderr, /^latch: database postgres:\/\/latch@127\.0\.0\.1:1\/latch\?sslmode=disable&sslpassword=… \(password not shown\)$/m);
  assert.doesNotMatch(refused.stderr, /hunter/);
  assert.equal(errorBodyOf(refused.stderr).code, "unavailable");
  if (TEST_DATABASE_URL === undefined) return; // the PostgreSQL pass (TEST_DATABASE_URL) runs the rest on a real database
  const schema = await createTestSchema();
  const env = { SECRETS_KEY, DATABASE_URL: schema.url };
  assert.equal((await latch(dataDir, ["migrate"], env)).code, 0);
  const unknown = await latch(dataDir, ["tenant", "show", "nobody.example.com"], env);
  const named = new URL(schema.url);
  const password = named.password;
  named.password = "";
  const shown = named.toString();
  assert.ok(unknown.stderr.includes(`latch: database ${shown}`), unknown.stderr);
  assert.ok(String(errorBodyOf(unknown.stderr).message).includes(`in ${shown}`), unknown.stderr);
  if (password !== "") assert.ok(!unknown.stderr.includes(password));
});

test("issue 34 item 7: a value out of a list is one issue naming the field and every allowed value, whatever the wrong value's type", async (t) => {
  const dataDir = tempDataDir(t);
  const settings = JSON.stringify({ ...HOOKS, botProtection: { provider: "none" } });
  assert.equal((await latch(dataDir, ["tenant", "create", "--domain", "shop.example.com", "--settings", settings])).code, 0);
  const tiers = '"15m", "1h", "8h", "1d", "7d", "30d"';
  for (const [patch, field, allowed] of [
    ['{"sessionTier":"2y"}', "settings.sessionTier", tiers],
    ['{"sessionTier":7}', "settings.sessionTier", tiers],
    ['{"sessionTier":null}', "settings.sessionTier", tiers],
    ['{"botProtection":{"provider":5}}', "settings.botProtection.provider", '"turnstile", "hcaptcha", "recaptcha", "altcha", "none"'],
  ] as const) {
    const result = await latch(dataDir, ["tenant", "update", "shop.example.com", "--settings", patch]);
    assert.equal(result.code, 1, result.stderr);
    const body = errorBodyOf(result.stderr);
    assert.doesNotMatch(result.stderr, /equal to constant|must be string/, patch);
    assert.deepEqual(body.details, [{ field, rule: "enum", message: `must be one of: ${allowed}` }], patch);
    assert.equal(body.message, `The tenant settings are not valid: ${field} must be one of: ${allowed}.`, "one line says it all");
  }
  const unknownName = errorBodyOf((await latch(dataDir, ["tenant", "update", "shop.example.com", "--settings", '{"sessionTeir":"7d"}'])).stderr);
  assert.deepEqual(unknownName.details, [{ field: "settings.sessionTeir", rule: "additionalProperties", message: "is not one of the names allowed here" }]);
});

test("issue 34 item 7: malformed settings JSON says where (line, column, character) and never repeats the text", async (t) => {
  const dataDir = tempDataDir(t);
  const file = join(dataDir, "settings.json");
  writeFileSync(file, '{\n  "sessionTier": "7d",\n  "botProtection": {"provider": "turnstile", "secretKey": hunter2}\n}\n');
  const cases = [
    {
      args: ["--settings", '{"sessionTier":"7d",}'],
      field: "--settings",
      where: "at line 1, column 21 (character 21): expected a double-quoted property name",
    },
    { args: ["--settings", "{'sessionTier':'7d'}"], field: "--settings", where: "at line 1, column 2 (character 2): expected a double-quoted property name" },
    {
      args: ["--settings", '{"sessionTier":"7d"'],
      field: "--settings",
      where: "at line 1, column 20 (character 20): expected ',' or '}' after the property value",
    },
    { args: ["--settings-file", file], field: "--settings-file", where: "at line 3, column 59 (character 84): expected a value" },
  ];
  for (const c of cases) {
    const result = await latch(dataDir, ["tenant", "create", "--domain", "shop.example.com", ...c.args]);
    assert.deepEqual([result.code, result.stdout], [2, ""], result.stderr);
    const body = errorBodyOf(result.stderr);
    assert.equal((body.details as { field: string }[])[0]!.field, c.field);
    assert.ok(String(body.message).startsWith(`${c.field} is not valid JSON ${c.where}`), String(body.message));
    assert.doesNotMatch(result.stderr, /hunter2|sessionTier/, "the text is never repeated: it may hold a secret");
  }
  const notObject = errorBodyOf((await latch(dataDir, ["tenant", "create", "--domain", "shop.example.com", "--settings", "[1]"])).stderr);
  assert.match(String(notObject.message), /^--settings must be a JSON object .*, not an array/);
});

/** The words of a shell command as sh splits them: blanks apart, '…' and "…" quoting (across lines), backslash-newline joining. */
function shellWords(command: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  for (let i = 0; i < command.length; i++) {
    const c = command[i]!;
    if (c === "'" || c === '"') {
      const end = command.indexOf(c, i + 1);
      assert.ok(end > i, `unclosed ${c} in ${command}`);
      word = (word ?? "") + command.slice(i + 1, end);
      i = end;
    } else if (c === "\\" && command[i + 1] === "\n") i++;
    else if (/\s/.test(c)) {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else word = (word ?? "") + c;
  }
  if (word !== undefined) words.push(word);
  return words;
}

/** The first ```sh block under a README heading. */
function readmeCommand(heading: string): string {
  const readme = readFileSync("README.md", "utf8");
  const section = readme.slice(readme.indexOf(`\n${heading}\n`));
  return /```sh\n([\s\S]*?)```/.exec(section)![1]!.trim();
}

test("issue 34 item 4: the README's onboarding command, run as written beside a dev server, creates the tenant in the dev server's database; without DATABASE_URL in npm start's", async (t) => {
  const words = shellWords(readmeCommand("## Onboard a tenant"));
  const assignments = words.slice(0, words.indexOf("npm"));
  assert.deepEqual(assignments, ["DATABASE_URL=sqlite:./data/dev.db"], "the dev server's database, named");
  assert.deepEqual(words.slice(assignments.length, assignments.length + 4), ["npm", "run", "latch", "--"]);
  const args = words.slice(assignments.length + 4);
  const env = Object.fromEntries(assignments.map((a) => [a.slice(0, a.indexOf("=")), a.slice(a.indexOf("=") + 1)]));
  // What the dev server prints at start for its own database is the same DATABASE_URL.
  assert.ok(readFileSync("README.md", "utf8").includes(cliCommandFor(loadConfig({ DEV_MODE: "true" }), "tenant list")));

  // A checkout where `npm run dev` ran: its database exists (made here as its first start makes it) and ./data/latch.db does not.
  const checkout = tempDataDir(t);
  assert.equal((await latchIn(checkout, ["migrate"], { DATABASE_URL: "sqlite:./data/dev.db" })).code, 0);
  const created = await latchIn(checkout, args, env);
  assert.equal(created.code, 0, created.stderr);
  assert.equal((JSON.parse(created.stdout) as { domain: string }).domain, "shop.example.com");
  assert.match(created.stderr, new RegExp(`^latch: database sqlite:${join(checkout, "data", "dev.db")}$`, "m"));
  const shown = await latchIn(checkout, ["tenant", "show", "shop.example.com"], env);
  assert.equal(shown.code, 0, "the dev server's database has it");
  const elsewhere = await latchIn(checkout, ["tenant", "show", "shop.example.com"], {});
  assert.equal(elsewhere.code, 1, "the default database is another file");
  assert.match(JSON.stringify(errorBodyOf(elsewhere.stderr).details), /Dev mode's database is .*dev\.db/, "and the refusal points at dev mode's");

  // The production path: the same command without DATABASE_URL, in a checkout where only `npm start` ran.
  const production = tempDataDir(t);
  mkdirSync(join(production, "data"));
  const started = await latchIn(production, args, {});
  assert.equal(started.code, 0, started.stderr);
  assert.match(started.stderr, new RegExp(`^latch: database sqlite:${join(production, "data", "latch.db")} \\(DATABASE_URL is unset`, "m"));
});
