/**
 * decisions.md#openid-provider-clients: a tenant's OAuth clients through the admin API and the CLI,
 * on SQLite and PostgreSQL (LATCH_TEST_STORE). The secret is looked for in every answer but the
 * creation's, the captured logs, the audit rows and the stored row (only its SHA-256 may be there);
 * each redirect URI rule has its refusal; another tenant's key neither sees nor changes a client;
 * removing a client removes its grants and their tokens.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import type { LightMyRequestResponse } from "fastify";
import { createTenant } from "../src/flows/tenants/tenants.js";
import { MAX_OAUTH_CLIENTS_PER_TENANT } from "../src/rules.js";
import { clientSecretMatches, hashClientSecret } from "../src/security/client-secrets.js";
import { sha256Hex } from "../src/security/hashing.js";
import { assertError } from "./support/assertions.js";
import { adminRequest, receiverSettings, tenantIdOf, type AdminOptions } from "./support/flows.js";
import { createHarness, type Harness } from "./support/harness.js";

const SAME_APP_DOMAIN = "second.example.com";
const OTHER_APP_DOMAIN = "other-app.example.com";
const PATH = "/auth/admin/oauth-clients";

interface ClientAnswer {
  clientId: string;
  name: string;
  type: "confidential" | "public";
  firstParty: boolean;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  createdAt: string;
  updatedAt: string;
  clientSecret?: string;
}

const webApp = { name: "Shop web", type: "confidential", redirectUris: ["https://shop.example.com/oauth/callback"] } as const;
const spa = { name: "Shop SPA", type: "public", redirectUris: ["https://app.example.com/cb"] } as const;

async function createClient(h: Harness, body: object = webApp, options: AdminOptions = {}): Promise<ClientAnswer> {
  const res = await adminRequest(h, "POST", PATH, body, options);
  assert.equal(res.statusCode, 201, res.body);
  return res.json<{ client: ClientAnswer }>().client;
}

function fieldsOf(res: LightMyRequestResponse): string[] {
  return (assertError(res, 400, "validation_failed").details as { field: string }[]).map((d) => d.field);
}

test("clientSecretMatches compares a presented secret with the stored SHA-256, in constant time", () => {
  const hash = hashClientSecret("the-secret");
  assert.equal(hash, sha256Hex("the-secret"));
  assert.equal(clientSecretMatches(hash, "the-secret"), true);
  assert.equal(clientSecretMatches(hash, "the-secreT"), false);
  assert.equal(clientSecretMatches(hash, ""), false);
  assert.equal(clientSecretMatches(hash, hash), false, "the hash itself is no secret");
});

test("oauth clients CRUD: the secret is shown once and stored only as its SHA-256; no other answer, log line or audit row holds it", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  h.deps.log.level = "trace";
  const answers: string[] = [];
  const send = async (...args: Parameters<typeof adminRequest>) => {
    const res = await adminRequest(...args);
    answers.push(res.body);
    return res;
  };

  const createdRes = await adminRequest(h, "POST", PATH, { ...webApp, postLogoutRedirectUris: ["https://shop.example.com/bye"] });
  assert.equal(createdRes.statusCode, 201, createdRes.body);
  const created = createdRes.json<{ client: ClientAnswer }>().client;
  const secret = created.clientSecret!;
  assert.match(created.clientId, /^[A-Za-z0-9_-]{22}$/, "128 random bits, base64url");
  assert.match(secret, /^[A-Za-z0-9_-]{43}$/, "256 random bits, base64url");
  const now = new Date(h.clock.now()).toISOString();
  assert.deepEqual(created, {
    clientId: created.clientId,
    name: "Shop web",
    type: "confidential",
    firstParty: true,
    redirectUris: ["https://shop.example.com/oauth/callback"],
    postLogoutRedirectUris: ["https://shop.example.com/bye"],
    createdAt: now,
    updatedAt: now,
    clientSecret: secret,
  });
  const row = await h.db.selectFrom("oauth_clients").selectAll().where("client_id", "=", created.clientId).executeTakeFirstOrThrow();
  assert.equal(row.secret_hash, sha256Hex(secret), "only the SHA-256 is stored");
  assert.ok(clientSecretMatches(row.secret_hash, secret), "what the provider will check it with");
  assert.ok(!JSON.stringify(row).includes(secret));

  h.clock.advance(1000);
  const pub = await send(h, "POST", PATH, { ...spa, firstParty: false });
  assert.equal(pub.statusCode, 201, pub.body);
  const publicClient = pub.json<{ client: ClientAnswer }>().client;
  assert.equal(publicClient.clientSecret, undefined, "a public client has no secret");
  assert.deepEqual([publicClient.firstParty, publicClient.postLogoutRedirectUris], [false, []]);
  assert.notEqual(publicClient.clientId, created.clientId);
  const publicRow = await h.db.selectFrom("oauth_clients").selectAll().where("client_id", "=", publicClient.clientId).executeTakeFirstOrThrow();
  assert.equal(publicRow.secret_hash, null);

  const listed = await send(h, "GET", PATH);
  assert.equal(listed.statusCode, 200, listed.body);
  const { clientSecret: _secret, ...createdView } = created;
  assert.deepEqual(listed.json<{ clients: ClientAnswer[] }>().clients, [createdView, publicClient], "oldest first, never a secret");

  const shown = await send(h, "GET", `${PATH}/${created.clientId}`);
  assert.equal(shown.statusCode, 200, shown.body);
  assert.equal(shown.json<{ client: ClientAnswer }>().client.clientSecret, undefined);

  h.clock.advance(1000);
  const patched = await send(h, "PATCH", `${PATH}/${created.clientId}`, {
    name: "  Shop  ",
    redirectUris: ["https://shop.example.com/oauth/callback", "http://127.0.0.1:8080/cb"],
    postLogoutRedirectUris: [],
    firstParty: false,
  });
  assert.equal(patched.statusCode, 200, patched.body);
  const after = patched.json<{ client: ClientAnswer }>().client;
  assert.deepEqual(
    [after.name, after.redirectUris, after.postLogoutRedirectUris, after.firstParty, after.type],
    ["Shop", ["https://shop.example.com/oauth/callback", "http://127.0.0.1:8080/cb"], [], false, "confidential"],
  );
  assert.equal(after.createdAt, created.createdAt);
  assert.equal(after.updatedAt, new Date(h.clock.now()).toISOString());
  const rowAfter = await h.db.selectFrom("oauth_clients").selectAll().where("client_id", "=", created.clientId).executeTakeFirstOrThrow();
  assert.equal(rowAfter.secret_hash, row.secret_hash, "a change keeps the secret");

  // The type and the secret never change; an empty change is refused.
  assert.deepEqual(fieldsOf(await send(h, "PATCH", `${PATH}/${created.clientId}`, { type: "public" })), ["type"]);
  // A type out of the list names every allowed one, as a tenant setting's does.
  assert.deepEqual(assertError(await send(h, "POST", PATH, { ...webApp, type: "secret" }), 400, "validation_failed").details, [
    { field: "type", rule: "enum", message: 'must be one of: "confidential", "public"' },
  ]);
  assert.deepEqual(fieldsOf(await send(h, "PATCH", `${PATH}/${created.clientId}`, { clientSecret: "chosen-by-me-123456" })), ["clientSecret"]);
  assert.equal(fieldsOf(await send(h, "PATCH", `${PATH}/${created.clientId}`, {})).length, 1);

  const removed = await send(h, "DELETE", `${PATH}/${publicClient.clientId}`);
  assert.equal(removed.statusCode, 200, removed.body);
  assert.deepEqual(removed.json(), { success: true, clientId: publicClient.clientId });
  for (const [method, body] of [["GET"], ["PATCH", { name: "x" }], ["DELETE"]] as const) {
    assertError(await send(h, method, `${PATH}/${publicClient.clientId}`, body), 404, "not_found");
    assertError(await send(h, method, `${PATH}/AAAAAAAAAAAAAAAAAAAAAA`, body), 404, "not_found");
    assert.deepEqual(fieldsOf(await send(h, method, `${PATH}/not%20an%20id`, body)), ["clientId"], "a malformed id is bad input");
  }
  assert.deepEqual(
    (await send(h, "GET", PATH)).json<{ clients: ClientAnswer[] }>().clients.map((c) => c.clientId),
    [created.clientId],
  );

  assert.ok(!answers.some((body) => body.includes(secret)), "no answer but the creation's holds the secret");
  assert.ok(!h.logs.some((line) => line.includes(secret)), "no log line holds the secret");
  // A future log line that carries the creation's answer still hides the secret (logging.ts redact paths).
  h.deps.log.info({ client: created, clientSecret: secret }, "redaction probe");
  assert.ok(h.logs.some((line) => line.includes("redaction probe")) && !h.logs.some((line) => line.includes(secret)));
  const audit = await h.db.selectFrom("audit_events").selectAll().where("type", "like", "oauth_client_%").orderBy("id").execute();
  assert.ok(!JSON.stringify(audit).includes(secret) && !JSON.stringify(audit).includes(row.secret_hash), "neither the secret nor its hash in the audit log");
  assert.deepEqual(
    audit.map((a) => [a.type, a.member_id, a.ip, JSON.parse(a.details!)]),
    [
      ["oauth_client_created", null, "198.51.100.7", { clientId: created.clientId, by: "admin" }],
      ["oauth_client_created", null, "198.51.100.7", { clientId: publicClient.clientId, by: "admin" }],
      ["oauth_client_updated", null, "198.51.100.7", { clientId: created.clientId, by: "admin" }],
      ["oauth_client_deleted", null, "198.51.100.7", { clientId: publicClient.clientId, by: "admin" }],
    ],
  );
});

test("redirect URIs: absolute, canonical, no fragment, wildcard or credentials; https, http on loopback only; private-use schemes for public clients only; 1–10, 2048 characters, no repeats", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const refusedOn = async (uri: string, type: "confidential" | "public" = "confidential") => {
    const res = await adminRequest(h, "POST", PATH, { ...webApp, type, redirectUris: ["https://shop.example.com/ok", uri] });
    const details = assertError(res, 400, "validation_failed").details as { field: string; message: string }[];
    assert.deepEqual(
      details.map((d) => d.field),
      ["redirectUris.1"],
      `${uri}: ${res.body}`,
    );
    return details[0]!.message;
  };
  const accepted = async (uri: string, type: "confidential" | "public" = "confidential") => {
    const res = await adminRequest(h, "POST", PATH, { ...webApp, type, redirectUris: [uri] });
    assert.equal(res.statusCode, 201, `${uri}: ${res.body}`);
    assert.deepEqual(res.json<{ client: ClientAnswer }>().client.redirectUris, [uri], "stored exactly as given");
  };

  assert.match(await refusedOn("/relative/cb"), /absolute/);
  assert.match(await refusedOn("shop.example.com/cb"), /absolute/);
  assert.match(await refusedOn("https://shop.example.com/cb#frag"), /fragment/);
  assert.match(await refusedOn("https://shop.example.com/cb#"), /fragment/, "an empty fragment too");
  assert.match(await refusedOn("https://*.example.com/cb"), /wildcard|canonical/);
  assert.match(await refusedOn("https://shop.example.com/*"), /wildcard/);
  assert.match(await refusedOn("https://user:pass@shop.example.com/cb"), /credentials/);
  assert.match(await refusedOn("https://user@shop.example.com/cb"), /credentials/);
  assert.match(await refusedOn("https://@shop.example.com/cb"), /credentials/);
  assert.match(await refusedOn("com.example.app://user@cb", "public"), /credentials/);
  // http only to the machine itself.
  assert.match(await refusedOn("http://shop.example.com/cb"), /loopback/);
  assert.match(await refusedOn("http://10.0.0.1/cb"), /loopback/);
  assert.match(await refusedOn("http://localhost.example.com/cb"), /loopback/);
  assert.match(await refusedOn("http://128.0.0.1/cb"), /loopback/);
  assert.match(await refusedOn("http://[::2]/cb"), /loopback/);
  assert.match(await refusedOn("http://shop.example.com/cb", "public"), /loopback/, "for a public client too");
  // One spelling: what the parser would rewrite is refused, with the canonical form.
  assert.match(await refusedOn("https://Shop.Example.com/cb"), /canonical form: https:\/\/shop\.example\.com\/cb/);
  assert.match(await refusedOn("https://shop.example.com:443/cb"), /canonical/);
  assert.match(await refusedOn("https://shop.example.com"), /canonical form: https:\/\/shop\.example\.com\//);
  assert.match(await refusedOn("https://shop.example.com/a/../cb"), /canonical/);
  assert.match(await refusedOn("https://shop.example.com/c b"), /canonical/);
  assert.match(await refusedOn("http://127.1/cb"), /canonical form: http:\/\/127\.0\.0\.1\/cb/);
  assert.match(await refusedOn("HTTPS://shop.example.com/cb"), /canonical/);
  assert.match(await refusedOn(" https://shop.example.com/cb"), /canonical/);
  // Schemes.
  assert.match(await refusedOn("javascript:alert(1)", "public"), /private-use scheme/);
  assert.match(await refusedOn("data:text/html,x", "public"), /private-use scheme/);
  assert.match(await refusedOn("file:///etc/passwd", "public"), /private-use scheme/);
  assert.match(await refusedOn("myapp:/cb", "public"), /private-use scheme/, "a private-use scheme is a reversed domain");
  assert.match(await refusedOn("ftp://shop.example.com/cb", "public"), /private-use scheme/);
  assert.match(await refusedOn("com.example.app:/cb"), /public client/, "a confidential client is a server: no app scheme");
  assert.match(await refusedOn(`https://shop.example.com/${"a".repeat(2048)}`), /2048|characters|long/i);

  await accepted("https://shop.example.com/oauth/callback?tenant=1");
  await accepted("http://localhost/cb");
  await accepted("http://localhost:3000/cb");
  await accepted("http://127.0.0.1:8080/cb");
  await accepted("http://127.9.8.7/cb");
  await accepted("http://[::1]:8080/cb");
  await accepted("com.example.app:/oauth2redirect", "public");
  await accepted("com.example.app://callback", "public");
  await accepted(`https://shop.example.com/${"a".repeat(2048 - "https://shop.example.com/".length)}`);

  // Counts and repeats, on both lists.
  const create = (body: object) => adminRequest(h, "POST", PATH, { ...webApp, ...body });
  assert.deepEqual(fieldsOf(await create({ redirectUris: [] })), ["redirectUris"]);
  const eleven = Array.from({ length: 11 }, (_, i) => `https://shop.example.com/cb${i}`);
  assert.deepEqual(fieldsOf(await create({ redirectUris: eleven })), ["redirectUris"]);
  assert.equal((await create({ redirectUris: eleven.slice(0, 10), postLogoutRedirectUris: eleven.slice(0, 10) })).statusCode, 201, "10 is the most");
  assert.deepEqual(fieldsOf(await create({ postLogoutRedirectUris: eleven })), ["postLogoutRedirectUris"]);
  assert.deepEqual(fieldsOf(await create({ redirectUris: ["https://shop.example.com/cb", "https://shop.example.com/cb"] })), ["redirectUris.1"]);
  assert.deepEqual(
    fieldsOf(await create({ postLogoutRedirectUris: ["http://example.com/bye"] })),
    ["postLogoutRedirectUris.0"],
    "the same rules for logout URIs",
  );
  assert.deepEqual(fieldsOf(await create({ postLogoutRedirectUris: ["https://a.example/x", "https://a.example/x"] })), ["postLogoutRedirectUris.1"]);
  assert.deepEqual(fieldsOf(await create({ redirectUris: [42] })), ["redirectUris.0"]);

  // The other fields.
  assert.deepEqual(fieldsOf(await create({ name: "" })), ["name"]);
  assert.deepEqual(fieldsOf(await create({ name: "   " })), ["name"]);
  assert.deepEqual(fieldsOf(await create({ name: "Sh\u200eop" })), ["name"], "no invisible formatting characters");
  assert.deepEqual(fieldsOf(await create({ name: "x".repeat(101) })), ["name"]);
  assert.deepEqual(fieldsOf(await create({ type: "trusted" })), ["type"]);
  assert.deepEqual(fieldsOf(await create({ firstParty: "yes" })), ["firstParty"]);
  assert.deepEqual(fieldsOf(await create({ clientId: "chosen" })), ["clientId"], "the id is Latch's to give");
  assert.deepEqual(fieldsOf(await create({ clientSecret: "chosen-secret-0123456789" })), ["clientSecret"], "and so is the secret");
  const { redirectUris: _r, ...withoutUris } = webApp;
  assert.deepEqual(fieldsOf(await adminRequest(h, "POST", PATH, withoutUris)), ["redirectUris"]);

  // A change is checked against the stored type: a confidential client can't take an app scheme later.
  const confidential = await createClient(h);
  assert.deepEqual(fieldsOf(await adminRequest(h, "PATCH", `${PATH}/${confidential.clientId}`, { redirectUris: ["com.example.app:/cb"] })), ["redirectUris.0"]);
  assert.deepEqual(fieldsOf(await adminRequest(h, "PATCH", `${PATH}/${confidential.clientId}`, { postLogoutRedirectUris: ["http://example.com/"] })), [
    "postLogoutRedirectUris.0",
  ]);
  const publicClient = await createClient(h, spa);
  assert.equal((await adminRequest(h, "PATCH", `${PATH}/${publicClient.clientId}`, { redirectUris: ["com.example.app:/cb"] })).statusCode, 200);
});

test(`a tenant has at most ${MAX_OAUTH_CLIENTS_PER_TENANT} clients, also when they are made at once; removing one makes room`, async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const made: ClientAnswer[] = [];
  for (let i = 0; i < MAX_OAUTH_CLIENTS_PER_TENANT - 3; i++) made.push(await createClient(h, { ...spa, name: `App ${i}` }));
  // Five at once for the last three places: the tenant's row is locked while each counts (PostgreSQL).
  const racing = await Promise.all(Array.from({ length: 5 }, (_, i) => adminRequest(h, "POST", PATH, { ...spa, name: `Racer ${i}` })));
  assert.deepEqual(racing.map((r) => r.statusCode).sort(), [201, 201, 201, 409, 409], racing.map((r) => r.body).join("\n"));
  for (const res of racing.filter((r) => r.statusCode === 409))
    assert.match(String(assertError(res, 409, "invalid_state").message), /at most 50 OAuth clients/);
  assert.equal((await adminRequest(h, "GET", PATH)).json<{ clients: unknown[] }>().clients.length, MAX_OAUTH_CLIENTS_PER_TENANT);
  // The cap is per tenant.
  await createTenant(h.deps, { domain: SAME_APP_DOMAIN, applicationId: h.tenant.applicationId, settings: receiverSettings(h) });
  await createClient(h, spa, { domain: SAME_APP_DOMAIN });
  assert.equal((await adminRequest(h, "DELETE", `${PATH}/${made[0]!.clientId}`)).statusCode, 200);
  await createClient(h, spa);
});

test("tenant isolation: another tenant of the same application neither sees, shows, changes nor removes a client; another application's key is 403", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const mine = await createClient(h);
  await createTenant(h.deps, { domain: SAME_APP_DOMAIN, applicationId: h.tenant.applicationId, settings: receiverSettings(h) });
  const other = await createTenant(h.deps, { domain: OTHER_APP_DOMAIN, settings: receiverSettings(h) });
  const same = { domain: SAME_APP_DOMAIN };
  const url = `${PATH}/${mine.clientId}`;

  assert.deepEqual((await adminRequest(h, "GET", PATH, undefined, same)).json<{ clients: unknown[] }>().clients, []);
  assertError(await adminRequest(h, "GET", url, undefined, same), 404, "not_found");
  assertError(await adminRequest(h, "PATCH", url, { redirectUris: ["https://evil.example.net/cb"] }, same), 404, "not_found");
  assertError(await adminRequest(h, "DELETE", url, undefined, same), 404, "not_found");
  assertError(await adminRequest(h, "GET", url, undefined, { key: other.internalApiKey! }), 403, "forbidden");
  assertError(await adminRequest(h, "DELETE", url, undefined, { key: other.internalApiKey! }), 403, "forbidden");
  assertError(await adminRequest(h, "GET", PATH, undefined, { key: null }), 401, "unauthorized");
  assertError(await adminRequest(h, "POST", PATH, { bad: true }, { key: null }), 401, "unauthorized"); // no key: nothing learnt from validation

  const row = await h.db.selectFrom("oauth_clients").selectAll().where("client_id", "=", mine.clientId).executeTakeFirstOrThrow();
  assert.deepEqual(JSON.parse(row.redirect_uris), webApp.redirectUris, "unchanged");
  assert.equal((await adminRequest(h, "GET", url)).statusCode, 200, "still there for its own tenant");
});

test("removing a client removes every grant given to it and their codes and tokens; another client's grant stays", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const doomed = await createClient(h);
  const kept = await createClient(h, spa);
  const tenantId = await tenantIdOf(h);
  const expiresAt = h.clock.now() + 3_600_000;
  const grant = (clientId: string, idHash: string) => ({ idHash, clientId, accountId: "1", expiresAt, payload: JSON.stringify({ kind: "Grant", clientId }) });
  await h.deps.store.oauth.upsertGrant(tenantId, grant(doomed.clientId, "a".repeat(64)));
  await h.deps.store.oauth.upsertGrant(tenantId, grant(kept.clientId, "b".repeat(64)));
  const artifacts: Array<[string, string]> = [
    ["c".repeat(64), "a".repeat(64)],
    ["d".repeat(64), "b".repeat(64)],
  ];
  for (const [idHash, grantHash] of artifacts)
    await h.deps.store.oauth.upsertArtifact(tenantId, { model: "RefreshToken", idHash, grantHash, uid: null, userCodeHash: null, expiresAt, payload: "{}" });

  assert.equal((await adminRequest(h, "DELETE", `${PATH}/${doomed.clientId}`)).statusCode, 200);
  assert.deepEqual(
    (await h.db.selectFrom("oauth_grants").select("client_id").execute()).map((r) => r.client_id),
    [kept.clientId],
  );
  assert.deepEqual(
    (await h.db.selectFrom("oauth_artifacts").select("grant_hash").execute()).map((r) => r.grant_hash),
    ["b".repeat(64)],
    "the refresh token of the removed client's grant went with it",
  );
});

const run = promisify(execFile);

async function latch(dataDir: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = {
    ...process.env,
    DATABASE_URL: `sqlite:${join(dataDir, "latch.db")}`,
    SECRETS_KEY: "11".repeat(32),
    SECRETS_KEY_PREVIOUS: "",
    LOG_LEVEL: "warn",
  };
  try {
    const { stdout, stderr } = await run(process.execPath, ["--import", "tsx", "src/cli/main.ts", ...args], { env });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

test("latch oauth-client add|list|show|update|remove: the API's objects on stdout; the secret printed by add only", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "latch-oauth-clients-"));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const hooks = {
    emailVerificationWebhook: "https://hooks.example.net/v",
    passwordResetWebhook: "https://hooks.example.net/r",
    magicLoginWebhook: "https://hooks.example.net/m",
  };
  const tenant = await latch(dataDir, ["tenant", "create", "--domain", "shop.example.com", "--settings", JSON.stringify(hooks)]);
  assert.equal(tenant.code, 0, tenant.stderr);
  const base = ["--tenant", "shop.example.com"];

  const added = await latch(dataDir, [
    "oauth-client",
    "add",
    "--name",
    "Shop web",
    "--type",
    "confidential",
    "--redirect-uri",
    "https://shop.example.com/cb",
    "--redirect-uri",
    "http://localhost:3000/cb",
    "--post-logout-redirect-uri",
    "https://shop.example.com/bye",
    ...base,
  ]);
  assert.equal(added.code, 0, added.stderr);
  const client = (JSON.parse(added.stdout) as { client: ClientAnswer }).client;
  assert.deepEqual([client.type, client.firstParty, client.redirectUris], ["confidential", true, ["https://shop.example.com/cb", "http://localhost:3000/cb"]]);
  const secret = client.clientSecret!;
  assert.match(secret, /^[A-Za-z0-9_-]{43}$/);

  const app = await latch(dataDir, [
    "oauth-client",
    "add",
    "--name",
    "App",
    "--type",
    "public",
    "--redirect-uri",
    "com.example.app:/cb",
    "--first-party",
    "false",
    ...base,
  ]);
  assert.equal(app.code, 0, app.stderr);
  assert.equal((JSON.parse(app.stdout) as { client: ClientAnswer }).client.clientSecret, undefined);
  const badUri = await latch(dataDir, [
    "oauth-client",
    "add",
    "--name",
    "X",
    "--type",
    "confidential",
    "--redirect-uri",
    "http://shop.example.com/cb",
    ...base,
  ]);
  assert.equal(badUri.code, 1);
  // A type out of the list names every allowed one, as a tenant setting's does (test/cli.test.ts).
  const badType = await latch(dataDir, ["oauth-client", "add", "--name", "X", "--type", "secret", "--redirect-uri", "https://shop.example.com/cb", ...base]);
  assert.equal(badType.code, 1, badType.stderr);
  assert.deepEqual((JSON.parse(badType.stderr.trim().split("\n").pop()!) as { details: unknown }).details, [
    { field: "type", rule: "enum", message: 'must be one of: "confidential", "public"' },
  ]);
  assert.equal((JSON.parse(badUri.stderr.trim().split("\n").pop()!) as { code: string }).code, "validation_failed");
  const noUri = await latch(dataDir, ["oauth-client", "add", "--name", "X", "--type", "public", ...base]);
  assert.equal(noUri.code, 2, noUri.stderr);

  const shown = await latch(dataDir, ["oauth-client", "show", client.clientId, ...base]);
  assert.equal(shown.code, 0, shown.stderr);
  const updated = await latch(dataDir, [
    "oauth-client",
    "update",
    client.clientId,
    "--name",
    "Shop",
    "--post-logout-redirect-uri",
    "",
    "--first-party",
    "false",
    ...base,
  ]);
  assert.equal(updated.code, 0, updated.stderr);
  const after = (JSON.parse(updated.stdout) as { client: ClientAnswer }).client;
  assert.deepEqual([after.name, after.postLogoutRedirectUris, after.firstParty, after.redirectUris], ["Shop", [], false, client.redirectUris]);
  const nothing = await latch(dataDir, ["oauth-client", "update", client.clientId, ...base]);
  assert.equal(nothing.code, 2);
  const listed = await latch(dataDir, ["oauth-client", "list", ...base]);
  assert.equal((JSON.parse(listed.stdout) as { clients: ClientAnswer[] }).clients.length, 2);
  const removed = await latch(dataDir, ["oauth-client", "remove", client.clientId, ...base]);
  assert.deepEqual(JSON.parse(removed.stdout), { success: true, clientId: client.clientId });
  const gone = await latch(dataDir, ["oauth-client", "show", client.clientId, ...base]);
  assert.equal(gone.code, 1);
  assert.match(gone.stderr, /not_found/);
  const unknown = await latch(dataDir, ["oauth-client", "list", "--tenant", "nowhere.example.com"]);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /unknown_tenant/);
  for (const out of [shown, updated, listed, removed, gone, app, added]) assert.ok(!out.stderr.includes(secret), "no log line holds the secret");
  for (const out of [shown, updated, listed, removed, gone, app]) assert.ok(!out.stdout.includes(secret), "only add prints the secret");
});
