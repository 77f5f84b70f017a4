/**
 * decisions.md#federated-connections: the tenant admin's connections to identity providers through
 * the admin API and the CLI, on SQLite and PostgreSQL (LATCH_TEST_STORE). The client secret is
 * looked for in every answer, the captured logs and the stored row; another tenant's key (same
 * application or not) neither sees nor changes them; removal takes the connection's links along.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import type { LightMyRequestResponse } from "fastify";
import { CONNECTION_TYPES } from "../src/flows/federation/connection-input.js";
import { createTenant } from "../src/flows/tenants/tenants.js";
import { assertError } from "./support/assertions.js";
import { adminRequest, receiverSettings, tenantIdOf } from "./support/flows.js";
import { createHarness, registerVerifiedMember } from "./support/harness.js";

const SECRET = "cs-Very-Secret-Value-0123456789";
const SAME_APP_DOMAIN = "second.example.com";
const OTHER_APP_DOMAIN = "other-app.example.com";

interface ConnectionAnswer {
  id: string;
  type: string;
  displayName: string;
  issuer: string | null;
  clientId: string;
  scopes: string[];
  allowSignup: boolean;
  emailDomains: string[] | null;
  redirectUri: string;
  createdAt: string;
  updatedAt: string;
}

const google = { id: "google", type: "google", displayName: "Google", clientId: "client-google", clientSecret: SECRET };

test("connections CRUD: presets fill the issuer, defaults, redirectUri; the secret is in no answer, log line or stored row in clear", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const answers: string[] = [];
  const send = async (...args: Parameters<typeof adminRequest>) => {
    const res = await adminRequest(...args);
    answers.push(res.body);
    return res;
  };

  const created = await send(h, "POST", "/auth/admin/connections", google);
  assert.equal(created.statusCode, 201, created.body);
  const connection = created.json<{ connection: ConnectionAnswer }>().connection;
  assert.deepEqual(
    { ...connection, createdAt: undefined, updatedAt: undefined },
    {
      id: "google",
      type: "google",
      displayName: "Google",
      issuer: "https://accounts.google.com",
      clientId: "client-google",
      scopes: ["openid", "email", "profile"],
      allowSignup: true,
      emailDomains: null,
      redirectUri: `https://${h.tenant.domain}/auth/federated/google/callback`,
      createdAt: undefined,
      updatedAt: undefined,
    },
  );
  assert.equal(connection.createdAt, new Date(h.clock.now()).toISOString());

  h.clock.advance(1000);
  const github = await send(h, "POST", "/auth/admin/connections", {
    id: "gh",
    type: "github",
    displayName: "GitHub",
    clientId: "Iv1.abc",
    clientSecret: "gh-secret-456",
    allowSignup: false,
  });
  assert.equal(github.statusCode, 201, github.body);
  assert.deepEqual(github.json<{ connection: ConnectionAnswer }>().connection.scopes, ["read:user", "user:email"]);
  assert.equal(github.json<{ connection: ConnectionAnswer }>().connection.issuer, null);
  h.clock.advance(1000);
  const entra = await send(h, "POST", "/auth/admin/connections", {
    id: "entra",
    type: "microsoft",
    displayName: "Contoso",
    issuer: "https://login.microsoftonline.com/contoso-tenant/v2.0",
    clientId: "c",
    clientSecret: "s",
    emailDomains: ["Contoso.COM", "contoso.com"],
  });
  assert.equal(
    entra.json<{ connection: ConnectionAnswer }>().connection.issuer,
    "https://login.microsoftonline.com/contoso-tenant/v2.0",
    "an explicit issuer overrides the preset",
  );
  assert.deepEqual(entra.json<{ connection: ConnectionAnswer }>().connection.emailDomains, ["contoso.com"], "lowercase, once");

  const listed = await send(h, "GET", "/auth/admin/connections");
  assert.equal(listed.statusCode, 200, listed.body);
  assert.deepEqual(
    listed.json<{ connections: ConnectionAnswer[] }>().connections.map((c) => c.id),
    ["google", "gh", "entra"],
    "oldest first",
  );

  h.clock.advance(1000);
  const patched = await send(h, "PATCH", "/auth/admin/connections/google", {
    displayName: "Google Workspace",
    clientSecret: "rotated-secret-789",
    emailDomains: null,
  });
  assert.equal(patched.statusCode, 200, patched.body);
  const after = patched.json<{ connection: ConnectionAnswer }>().connection;
  assert.equal(after.displayName, "Google Workspace");
  assert.equal(after.createdAt, connection.createdAt);
  assert.notEqual(after.updatedAt, connection.updatedAt);
  const row = await h.db.selectFrom("connections").selectAll().where("id", "=", "google").executeTakeFirstOrThrow();
  assert.equal(h.deps.secrets.open(row.client_secret_enc), "rotated-secret-789", "the new secret replaced the old one, sealed");
  const retyped = await send(h, "PATCH", "/auth/admin/connections/gh", { type: "gitlab" });
  assert.equal(retyped.json<{ connection: ConnectionAnswer }>().connection.issuer, "https://gitlab.com", "a new type brings its preset issuer");
  assert.deepEqual(retyped.json<{ connection: ConnectionAnswer }>().connection.scopes, ["openid", "email", "profile"], "and its default scopes");
  assertError(await send(h, "PATCH", "/auth/admin/connections/nope", { displayName: "x" }), 404, "not_found");

  const removed = await send(h, "DELETE", "/auth/admin/connections/entra");
  assert.equal(removed.statusCode, 200, removed.body);
  assertError(await send(h, "DELETE", "/auth/admin/connections/entra"), 404, "not_found");
  assert.deepEqual(
    (await send(h, "GET", "/auth/admin/connections")).json<{ connections: ConnectionAnswer[] }>().connections.map((c) => c.id),
    ["google", "gh"],
  );

  // A future log line that carries the input or the stored connection still hides the secret (logging.ts redact paths).
  h.deps.log.info({ clientSecret: SECRET, connection: { clientSecret: SECRET, clientSecretSealed: row.client_secret_enc } }, "redaction probe");
  assert.ok(h.logs.some((line) => line.includes("redaction probe") && !line.includes(row.client_secret_enc)));
  for (const secret of [SECRET, "gh-secret-456", "rotated-secret-789"]) {
    assert.ok(!answers.some((body) => body.includes(secret)), "no answer holds a client secret");
    assert.ok(!h.logs.some((line) => line.includes(secret)), "no log line holds a client secret");
  }
  const rows = await h.db.selectFrom("connections").selectAll().execute();
  const audit = await h.db.selectFrom("audit_events").selectAll().where("type", "like", "connection_%").execute();
  const stored = JSON.stringify([rows, audit]);
  for (const secret of [SECRET, "gh-secret-456", "rotated-secret-789"]) assert.ok(!stored.includes(secret), "stored only sealed");
  assert.deepEqual(
    audit.map((a) => [a.type, a.member_id, JSON.parse(a.details!)]),
    [
      ["connection_created", null, { connection: "google", by: "admin" }],
      ["connection_created", null, { connection: "gh", by: "admin" }],
      ["connection_created", null, { connection: "entra", by: "admin" }],
      ["connection_updated", null, { connection: "google", by: "admin" }],
      ["connection_updated", null, { connection: "gh", by: "admin" }],
      ["connection_deleted", null, { connection: "entra", by: "admin" }],
    ],
  );
});

test("connections refuse bad input: slug, type, oidc without issuer, http issuer without private networks, github with github.com or a path as issuer, duplicate id", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const fieldOf = (res: LightMyRequestResponse) => (assertError(res, 400, "validation_failed").details as { field: string }[])[0]!.field;
  const create = (body: object) => adminRequest(h, "POST", "/auth/admin/connections", { ...google, ...body });

  assert.equal(fieldOf(await create({ id: "Bad_Slug" })), "id");
  assert.equal(fieldOf(await create({ id: "x".repeat(33) })), "id");
  // A type out of the list names every allowed one, as a tenant setting's does.
  assert.deepEqual(assertError(await create({ type: "facebook" }), 400, "validation_failed").details, [
    { field: "type", rule: "enum", message: `must be one of: ${CONNECTION_TYPES.map((type) => JSON.stringify(type)).join(", ")}` },
  ]);
  assert.equal(fieldOf(await create({ type: "oidc" })), "issuer", "oidc needs its issuer");
  assert.equal(fieldOf(await create({ type: "oidc", issuer: "ftp://idp.example.net" })), "issuer");
  assert.equal(fieldOf(await create({ type: "github", issuer: "https://github.com" })), "issuer", "github.com is the default, no issuer");
  assert.equal(fieldOf(await create({ type: "github", issuer: "https://api.github.com" })), "issuer");
  assert.equal(fieldOf(await create({ type: "github", issuer: "https://ghe.example.com/api/v3" })), "issuer", "a server's base URL, no path");
  assert.equal(fieldOf(await create({ type: "github", issuer: "ftp://ghe.example.com" })), "issuer");
  assert.equal(fieldOf(await create({ scopes: ["email"] })), "scopes", "an OpenID connection asks for openid");
  assert.equal(fieldOf(await create({ displayName: "Goo\u200egle" })), "displayName");
  assert.equal(fieldOf(await create({ emailDomains: ["not a domain"] })), "emailDomains.0");
  assert.equal((await create({ type: "oidc", issuer: "http://127.0.0.1:9/realm" })).statusCode, 201, "http where private networks are allowed (tests, dev)");
  assertError(await create({ type: "oidc", issuer: "http://127.0.0.1:9/realm" }), 409, "conflict");
  assertError(await adminRequest(h, "PATCH", "/auth/admin/connections/google", { issuer: null }), 400, "validation_failed");
  assert.equal(
    fieldOf(await adminRequest(h, "PATCH", "/auth/admin/connections/google", { issuer: null })),
    "issuer",
    "an oidc connection can't drop its issuer",
  );

  const strict = await createHarness({ env: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: "false" } });
  t.after(() => strict.close());
  const refused = await adminRequest(strict, "POST", "/auth/admin/connections", { ...google, type: "oidc", issuer: "http://idp.example.net" });
  assert.equal((assertError(refused, 400, "validation_failed").details as { field: string }[])[0]!.field, "issuer", "http refused in production");
  assert.equal((await adminRequest(strict, "POST", "/auth/admin/connections", { ...google, type: "oidc", issuer: "https://idp.example.net" })).statusCode, 201);
  const ghes = { ...google, id: "ghes", type: "github" };
  const plainGhes = await adminRequest(strict, "POST", "/auth/admin/connections", { ...ghes, issuer: "http://ghe.example.com" });
  assert.equal(
    (assertError(plainGhes, 400, "validation_failed").details as { field: string }[])[0]!.field,
    "issuer",
    "a GitHub server over http refused in production",
  );
});

test("a github connection takes a GitHub Enterprise Server's base URL as issuer (its origin), null is github.com; turned oidc it must name an issuer", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const issuerOf = (res: LightMyRequestResponse) => {
    assert.equal(res.statusCode < 300, true, res.body);
    return res.json<{ connection: ConnectionAnswer }>().connection.issuer;
  };
  const github = { id: "gh", type: "github", displayName: "GitHub", clientId: "Iv1.abc", clientSecret: "gh-secret-456" };
  assert.equal(
    issuerOf(await adminRequest(h, "POST", "/auth/admin/connections", { ...github, issuer: "https://GHE.example.com/" })),
    "https://ghe.example.com",
  );
  assert.equal(
    issuerOf(await adminRequest(h, "PATCH", "/auth/admin/connections/gh", { issuer: "https://ghe2.example.com:8443" })),
    "https://ghe2.example.com:8443",
  );
  assert.equal(issuerOf(await adminRequest(h, "PATCH", "/auth/admin/connections/gh", { issuer: null })), null, "null goes back to github.com");
  assert.equal(issuerOf(await adminRequest(h, "PATCH", "/auth/admin/connections/gh", { issuer: "https://ghe.example.com" })), "https://ghe.example.com");
  const retyped = await adminRequest(h, "PATCH", "/auth/admin/connections/gh", { type: "oidc" });
  assert.equal((assertError(retyped, 400, "validation_failed").details as { field: string }[])[0]!.field, "issuer", "a server URL is no OpenID issuer");
  assert.equal(issuerOf(await adminRequest(h, "PATCH", "/auth/admin/connections/gh", { type: "gitlab" })), "https://gitlab.com");
  assert.equal(issuerOf(await adminRequest(h, "PATCH", "/auth/admin/connections/gh", { type: "github" })), null, "back to github: github.com");
});

test("tenant isolation: another tenant of the same application sees and changes none of them; another application's key is 403", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  assert.equal((await adminRequest(h, "POST", "/auth/admin/connections", google)).statusCode, 201);
  await createTenant(h.deps, { domain: SAME_APP_DOMAIN, applicationId: h.tenant.applicationId, settings: receiverSettings(h) });
  const other = await createTenant(h.deps, { domain: OTHER_APP_DOMAIN, settings: receiverSettings(h) });
  const same = { domain: SAME_APP_DOMAIN };

  assert.deepEqual((await adminRequest(h, "GET", "/auth/admin/connections", undefined, same)).json<{ connections: unknown[] }>().connections, []);
  assertError(await adminRequest(h, "PATCH", "/auth/admin/connections/google", { displayName: "Hijacked" }, same), 404, "not_found");
  assertError(await adminRequest(h, "DELETE", "/auth/admin/connections/google", undefined, same), 404, "not_found");
  assertError(await adminRequest(h, "GET", "/auth/admin/connections", undefined, { key: other.internalApiKey! }), 403, "forbidden");
  assertError(await adminRequest(h, "PATCH", "/auth/admin/connections/google", { displayName: "Hijacked" }, { key: other.internalApiKey! }), 403, "forbidden");
  assertError(await adminRequest(h, "GET", "/auth/admin/connections", undefined, { key: null }), 401, "unauthorized");
  // The same id in the other tenant is its own connection.
  assert.equal((await adminRequest(h, "POST", "/auth/admin/connections", google, same)).statusCode, 201);
  assert.equal((await adminRequest(h, "DELETE", "/auth/admin/connections/google", undefined, same)).statusCode, 200);
  const mine = (await adminRequest(h, "GET", "/auth/admin/connections")).json<{ connections: ConnectionAnswer[] }>().connections;
  assert.deepEqual(
    mine.map((c) => [c.id, c.displayName]),
    [["google", "Google"]],
  );
});

test("removing a connection removes its members' links, flows and pending steps, not the members or another connection's links", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  for (const id of ["google", "gitlab"]) assert.equal((await adminRequest(h, "POST", "/auth/admin/connections", { ...google, id })).statusCode, 201);
  const recordId = Number(await registerVerifiedMember(h, "ada@example.org"));
  const tenantId = await tenantIdOf(h);
  const now = h.clock.now();
  const identity = (id: string, connection: string) => ({
    tenant_id: tenantId,
    id,
    connection_id: connection,
    subject: `sub-${id}`,
    member_id: recordId,
    email: "ada@example.org",
    linked_seq: null,
    created_at: now,
    last_used_at: null,
  });
  await h.db
    .insertInto("federated_identities")
    .values([identity("i1", "google"), identity("i2", "gitlab")])
    .execute();
  const flow = {
    tenant_id: tenantId,
    flow_hash: "f".repeat(64),
    connection_id: "google",
    purpose: "login",
    member_id: 0,
    return_to: null,
    created_at: now,
    expires_at: now + 600_000,
  };
  await h.db.insertInto("federation_flows").values(flow).execute();
  const pending = { ...identity("x", "google"), pending_hash: "p".repeat(64), kind: "link", expires_at: now + 600_000 };
  const { id: _id, linked_seq: _seq, last_used_at: _used, ...pendingRow } = pending;
  await h.db.insertInto("federation_pending").values(pendingRow).execute();

  assert.equal((await adminRequest(h, "DELETE", "/auth/admin/connections/google")).statusCode, 200);
  assert.deepEqual(
    (await h.db.selectFrom("federated_identities").select("id").execute()).map((r) => r.id),
    ["i2"],
  );
  assert.equal((await h.db.selectFrom("federation_flows").selectAll().execute()).length, 0);
  assert.equal((await h.db.selectFrom("federation_pending").selectAll().execute()).length, 0);
  assert.ok(await h.deps.store.members.findMemberById(tenantId, recordId), "the member stays");
});

const run = promisify(execFile);

async function latch(dataDir: string, args: string[], input?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = {
    ...process.env,
    DATABASE_URL: `sqlite:${join(dataDir, "latch.db")}`,
    SECRETS_KEY: "11".repeat(32),
    SECRETS_KEY_PREVIOUS: "",
    LOG_LEVEL: "warn",
  };
  const child = execFileWithInput(["--import", "tsx", "src/cli/main.ts", ...args], env, input);
  try {
    const { stdout, stderr } = await child;
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

function execFileWithInput(args: string[], env: NodeJS.ProcessEnv, input: string | undefined) {
  const promise = run(process.execPath, args, { env });
  promise.child.stdin?.end(input ?? "");
  return promise;
}

test("latch connection add|list|update|remove: the API's objects on stdout; the secret from a file or stdin, never argv", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "latch-connections-"));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const hooks = {
    emailVerificationWebhook: "https://hooks.example.net/v",
    passwordResetWebhook: "https://hooks.example.net/r",
    magicLoginWebhook: "https://hooks.example.net/m",
  };
  const tenant = await latch(dataDir, ["tenant", "create", "--domain", "shop.example.com", "--settings", JSON.stringify(hooks)]);
  assert.equal(tenant.code, 0, tenant.stderr);
  const secretFile = join(dataDir, "secret.txt");
  writeFileSync(secretFile, `${SECRET}\n`);

  const base = ["--tenant", "shop.example.com", "--client-id", "cid"];
  const added = await latch(dataDir, [
    "connection",
    "add",
    "--id",
    "google",
    "--type",
    "google",
    "--display-name",
    "Google",
    "--client-secret-file",
    secretFile,
    ...base,
  ]);
  assert.equal(added.code, 0, added.stderr);
  const { connection } = JSON.parse(added.stdout) as { connection: ConnectionAnswer };
  assert.equal(connection.redirectUri, "https://shop.example.com/auth/federated/google/callback");
  assert.equal(connection.issuer, "https://accounts.google.com");
  const fromStdin = await latch(
    dataDir,
    [
      "connection",
      "add",
      "--id",
      "idp",
      "--type",
      "oidc",
      "--issuer",
      "https://idp.example.net",
      "--display-name",
      "IdP",
      "--client-secret-file",
      "-",
      "--email-domains",
      "Example.org",
      ...base,
    ],
    "stdin-secret-123\n",
  );
  assert.equal(fromStdin.code, 0, fromStdin.stderr);
  const onArgv = await latch(dataDir, ["connection", "add", "--id", "x", "--type", "google", "--display-name", "X", "--client-secret", "leaked", ...base]);
  assert.equal(onArgv.code, 2);
  assert.match(onArgv.stderr, /validation_failed.*ps/);
  const duplicate = await latch(dataDir, [
    "connection",
    "add",
    "--id",
    "google",
    "--type",
    "google",
    "--display-name",
    "G",
    "--client-secret-file",
    secretFile,
    ...base,
  ]);
  assert.equal(duplicate.code, 1);
  assert.equal((JSON.parse(duplicate.stderr.trim().split("\n").pop()!) as { code: string }).code, "conflict");
  // A type out of the list names every allowed one, as a tenant setting's does (test/cli.test.ts).
  const badType = await latch(dataDir, [
    "connection",
    "add",
    "--id",
    "fb",
    "--type",
    "facebook",
    "--display-name",
    "FB",
    "--client-secret-file",
    secretFile,
    ...base,
  ]);
  assert.equal(badType.code, 1, badType.stderr);
  assert.deepEqual((JSON.parse(badType.stderr.trim().split("\n").pop()!) as { details: unknown }).details, [
    { field: "type", rule: "enum", message: `must be one of: ${CONNECTION_TYPES.map((type) => JSON.stringify(type)).join(", ")}` },
  ]);

  const updated = await latch(dataDir, ["connection", "update", "idp", "--tenant", "shop.example.com", "--allow-signup", "false", "--email-domains", ""]);
  assert.equal(updated.code, 0, updated.stderr);
  const after = (JSON.parse(updated.stdout) as { connection: ConnectionAnswer }).connection;
  assert.deepEqual([after.allowSignup, after.emailDomains], [false, null]);
  const listed = await latch(dataDir, ["connection", "list", "--tenant", "shop.example.com"]);
  assert.deepEqual(
    (JSON.parse(listed.stdout) as { connections: ConnectionAnswer[] }).connections.map((c) => c.id),
    ["google", "idp"],
  );
  const removed = await latch(dataDir, ["connection", "remove", "google", "--tenant", "shop.example.com"]);
  assert.deepEqual(JSON.parse(removed.stdout), { success: true, id: "google" });
  const unknown = await latch(dataDir, ["connection", "list", "--tenant", "nowhere.example.com"]);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /unknown_tenant/);
  for (const out of [added, fromStdin, updated, listed, removed, duplicate, onArgv]) {
    assert.ok(!`${out.stdout}${out.stderr}`.includes(SECRET) && !out.stdout.includes("stdin-secret-123"), "the CLI prints no secret");
  }
});
