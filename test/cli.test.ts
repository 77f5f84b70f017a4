/** The `latch` CLI (D3) as a real child process on a real database, then used by the HTTP API. */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { promisify } from "node:util";
import { describeDuration, WEBHOOK_SECRET_ROTATION_WINDOW_MS } from "../src/rules.js";
import { operatorHeaders } from "./support/flows.js";
import { createHarness, deliverWebhooks, post, registerVerifiedMember } from "./support/harness.js";

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
  assert.equal((JSON.parse(mistyped.stderr) as { code: string }).code, "validation_failed", "errors are JSON too, on stderr");
  const deleted = await latch(dataDir, ["tenant", "delete", "b.example.com", "--confirm", "b.example.com"]);
  assert.equal(deleted.code, 0, deleted.stderr);
  assert.deepEqual(JSON.parse(deleted.stdout), {
    success: true,
    domain: "b.example.com",
    applicationId: (JSON.parse(deleted.stdout) as { applicationId: string }).applicationId,
    applicationDeleted: true,
  });
  const unknown = await latch(dataDir, ["tenant", "show", "b.example.com"]);
  assert.deepEqual([unknown.code, unknown.stdout, (JSON.parse(unknown.stderr) as { code: string }).code], [1, "", "unknown_tenant"]);

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
    { args: ["tenant", "create", "--domain", "x.example.com", "--settings", "{"], exit: 2, code: "validation_failed", field: "command" },
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
