/**
 * Importing members with foreign password hashes (contract.md#d29, decisions.md#importing-members): the admin
 * call and `latch import`, and logins against the imported hashes, on SQLite and (LATCH_TEST_STORE=postgres)
 * PostgreSQL. The hashes in fixtures/import/hashes.json were made by other implementations (Python's
 * hashlib and glibc's bcrypt, by fixtures/import/make-hashes.py) or are published vectors (Firebase's,
 * Argon2's reference README and test.c), never by Latch's verifier.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { performance } from "node:perf_hooks";
import { promisify } from "node:util";
import { runImportCommand } from "../src/cli/import.js";
import { resealSecrets } from "../src/cli/reseal.js";
import { FOREIGN_HASH_LIMITS } from "../src/rules.js";
import { assertError } from "./support/assertions.js";
import { KEEPS_IMPORTED_PASSWORD } from "../src/ui/pages/registration-pages.js";
import { adminRequest, changePassword, lastWebhookFor, loginCookie, nextIp, tenantIdOf, verify } from "./support/flows.js";
import { createHarness, deliverWebhooks, get, login, parseLink, post, registerVerifiedMember, type Harness } from "./support/harness.js";
import { assertPage, getPage } from "./support/ui-forms.js";
import { totpAt } from "./support/totp.js";

interface Fixtures {
  password: string;
  bcrypt2a: string;
  bcrypt2b: string;
  bcrypt2y: string;
  bcrypt2bCost14: string;
  scrypt: string;
  django: string;
  aspnetSha256: string;
  aspnetSha512: string;
  argon2Published: { password: string; hash: string };
  argon2idPublished: { password: string; hash: string };
  argon2iV10Published: { password: string; hash: string };
  firebasePublished: { password: string; salt: string; hash: string; params: { signerKey: string; saltSeparator: string; rounds: number; memCost: number } };
}
const F = JSON.parse(readFileSync(new URL("./fixtures/import/hashes.json", import.meta.url), "utf8")) as Fixtures;
/** node-argon2 (the `argon2` package, common in Node apps) writes its parameters as m=…,p=…,t=…. */
const NODE_ARGON2 = (
  JSON.parse(readFileSync(new URL("./fixtures/argon2-node-argon2.json", import.meta.url), "utf8")) as { hashes: { password: string; phc: string }[] }
).hashes[0]!;
const FIREBASE_HASH = `firebase-scrypt$${F.firebasePublished.salt}$${F.firebasePublished.hash}`;
const run = promisify(execFile);
const TOTP_SECRET = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP";

type Answer = {
  success: true;
  dryRun: boolean;
  imported: number;
  skipped: number;
  refused: { index: number; reason: string }[];
  formats: Record<string, number>;
};

async function importCall(h: Harness, body: unknown, dryRun = false) {
  return adminRequest(h, "POST", `/auth/admin/members/import${dryRun ? "?dryRun=true" : ""}`, body);
}

async function imported(h: Harness, body: unknown, dryRun = false): Promise<Answer> {
  const res = await importCall(h, body, dryRun);
  assert.equal(res.statusCode, 200, res.body);
  return res.json<Answer>();
}

async function storedHash(h: Harness, email: string): Promise<string | null> {
  const row = await h.db
    .selectFrom("members")
    .select("password_hash")
    .where("tenant_id", "=", await tenantIdOf(h))
    .where("email", "=", email)
    .executeTakeFirstOrThrow();
  return row.password_hash;
}

async function memberCount(h: Harness): Promise<number> {
  const rows = await h.db
    .selectFrom("members")
    .select("id")
    .where("tenant_id", "=", await tenantIdOf(h))
    .execute();
  return rows.length;
}

const formats = [
  { email: "bcrypt2a@example.org", hash: F.bcrypt2a, password: F.password, format: "bcrypt" },
  { email: "bcrypt2b@example.org", hash: F.bcrypt2b, password: F.password, format: "bcrypt" },
  { email: "bcrypt2y@example.org", hash: F.bcrypt2y, password: F.password, format: "bcrypt" },
  { email: "scrypt@example.org", hash: F.scrypt, password: F.password, format: "scrypt" },
  { email: "django@example.org", hash: F.django, password: F.password, format: "pbkdf2Django" },
  { email: "aspnet256@example.org", hash: F.aspnetSha256, password: F.password, format: "pbkdf2AspNet" },
  { email: "aspnet512@example.org", hash: F.aspnetSha512, password: F.password, format: "pbkdf2AspNet" },
  { email: "argon2@example.org", hash: F.argon2Published.hash, password: F.argon2Published.password, format: "argon2" },
  { email: "argon2id@example.org", hash: F.argon2idPublished.hash, password: F.argon2idPublished.password, format: "argon2" },
  { email: "argon2v10@example.org", hash: F.argon2iV10Published.hash, password: F.argon2iV10Published.password, format: "argon2" },
  { email: "node-argon2@example.org", hash: NODE_ARGON2.phc, password: NODE_ARGON2.password, format: "argon2" },
  { email: "firebase@example.org", hash: FIREBASE_HASH, password: F.firebasePublished.password, format: "firebaseScrypt" },
];

test("D29 every format signs in with its old password, is rehashed to Argon2id in the login, and signs in again; a wrong password is 401", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const members = formats.map((f) => ({ email: f.email, emailVerified: true, passwordHash: f.hash, name: "Imported", createdAt: "2020-05-01T10:00:00Z" }));
  const answer = await imported(h, { members, firebaseScrypt: F.firebasePublished.params });
  assert.deepEqual(answer.refused, []);
  assert.equal(answer.imported, formats.length);
  assert.deepEqual(answer.formats, { argon2: 4, bcrypt: 3, scrypt: 1, firebaseScrypt: 1, pbkdf2Django: 1, pbkdf2AspNet: 2, none: 0 });
  // The signer key is sealed, never stored in the clear.
  const params = await h.db
    .selectFrom("imported_hash_params")
    .selectAll()
    .where("tenant_id", "=", await tenantIdOf(h))
    .execute();
  assert.equal(params.length, 1);
  assert.ok(!params[0]!.params_sealed.includes(F.firebasePublished.params.signerKey));
  // `latch secrets reseal` visits them (already under the current key here).
  assert.deepEqual((await resealSecrets(h.deps)).importedHashParams, { resealed: 0, current: 1, unreadable: 0, changedMeanwhile: 0 });

  for (const f of formats) {
    assert.ok((await storedHash(h, f.email))!.startsWith("foreign:"), f.email);
    assertError(await login(h, f.email, `${f.password}-wrong`), 401, "invalid_credentials");
    assert.ok((await storedHash(h, f.email))!.startsWith("foreign:"), `${f.email}: a wrong password changes nothing`);
    const first = await login(h, f.email, f.password);
    assert.equal(first.statusCode, 200, `${f.email}: ${first.body}`);
    assert.match((await storedHash(h, f.email))!, /^\$argon2id\$/, f.email);
    const again = await login(h, f.email, f.password);
    assert.equal(again.statusCode, 200, `${f.email} after the rehash: ${again.body}`);
    assertError(await login(h, f.email, `${f.password}-wrong`), 401, "invalid_credentials");
  }
  // createdAt is the old system's.
  const row = await h.db.selectFrom("members").select("created_at").where("email", "=", "scrypt@example.org").executeTakeFirstOrThrow();
  assert.equal(Number(row.created_at), Date.parse("2020-05-01T10:00:00Z"));
  // The foreign hash is never logged.
  const logs = h.logs.join("");
  for (const f of formats) assert.ok(!logs.includes(f.hash.slice(-20)), `${f.format} hash in the logs`);
  assert.ok(!logs.includes(F.firebasePublished.params.signerKey));
});

test("D29 a bcrypt verify runs off the event loop: a cost-14 hash's login leaves the loop idle while it is checked", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await imported(h, { members: [{ email: "slow@example.org", emailVerified: true, passwordHash: F.bcrypt2bCost14 }] });
  await login(h, "warm-up@example.org", F.password); // the first request's one-time costs (routes, schemas) stay out of the measure
  // bcryptjs ran the 2^14 rounds on the event loop, in 100 ms slices: utilization near 1 for the whole verify.
  // On libuv's pool the loop only waits, so any other request is answered meanwhile.
  let ticks = 0;
  const timer = setInterval(() => (ticks += 1), 10);
  const before = performance.eventLoopUtilization();
  const started = performance.now();
  const wrong = await login(h, "slow@example.org", "Wrong-Passw0rd!");
  const busy = performance.eventLoopUtilization(before);
  const elapsed = performance.now() - started;
  clearInterval(timer);
  assertError(wrong, 401, "invalid_credentials");
  assert.ok(busy.utilization < 0.5, `event loop busy ${(busy.utilization * 100).toFixed(0)} % of ${elapsed.toFixed(0)} ms (${ticks} ticks of 10 ms)`);
  const right = await login(h, "slow@example.org", F.password);
  assert.equal(right.statusCode, 200, right.body);
  assert.match((await storedHash(h, "slow@example.org"))!, /^\$argon2id\$/);
});

test("D29 two concurrent logins against one foreign hash both succeed and rehash it once", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await imported(h, { members: [{ email: "race@example.org", emailVerified: true, passwordHash: F.bcrypt2b }] });
  const [a, b] = await Promise.all([
    login(h, "race@example.org", F.password, { ip: "203.0.113.1" }),
    login(h, "race@example.org", F.password, { ip: "203.0.113.2" }),
  ]);
  assert.equal(a.statusCode, 200, a.body);
  assert.equal(b.statusCode, 200, b.body);
  assert.match((await storedHash(h, "race@example.org"))!, /^\$argon2id\$/);
  const updates = await h.db.selectFrom("members").select(["password_salt"]).where("email", "=", "race@example.org").executeTakeFirstOrThrow();
  assert.ok(updates.password_salt, "the rehash wrote its salt");
});

test("D29 a login decided again on a changed row computes the new Argon2id hash once, and writes it over the hash it finally matched", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await imported(h, { members: [{ email: "redo@example.org", emailVerified: true, passwordHash: F.bcrypt2b }] });
  // While the first new hash is computed, the member's hash becomes another foreign hash of the same password
  // (bcrypt2a): the session's transaction sees a changed row and the login is decided again on it.
  const hasher = h.deps.hasher;
  const original = hasher.hashPassword.bind(hasher);
  let hashes = 0;
  hasher.hashPassword = async (password, salt) => {
    hashes += 1;
    if (hashes === 1) {
      await h.db
        .updateTable("members")
        .set({ password_hash: `foreign:${F.bcrypt2a}` })
        .where("email", "=", "redo@example.org")
        .execute();
    }
    return original(password, salt);
  };
  t.after(() => (hasher.hashPassword = original));
  const res = await login(h, "redo@example.org", F.password);
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(hashes, 1, "one Argon2id hash for the whole login, not one per round");
  assert.match((await storedHash(h, "redo@example.org"))!, /^\$argon2id\$/);
});

test("D29 refusals: each member alone with its index and reason, cost limits included; the others are imported whole", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const tooCostlyBcrypt = F.bcrypt2b.replace(/^\$2b\$05\$/, `$2b$${FOREIGN_HASH_LIMITS.bcryptCost + 1}$`);
  const tooCostlyScrypt = F.scrypt.replace("ln=14", `ln=${FOREIGN_HASH_LIMITS.scryptLogN + 1}`);
  const tooCostlyDjango = F.django.replace("$10000$", `$${FOREIGN_HASH_LIMITS.pbkdf2Iterations + 1}$`);
  const aspnet = Buffer.from(F.aspnetSha256, "base64");
  aspnet.writeUInt32BE(FOREIGN_HASH_LIMITS.pbkdf2Iterations + 1, 5);
  const tooCostlyArgon2 = F.argon2Published.hash.replace("m=65536", `m=${FOREIGN_HASH_LIMITS.argon2MemoryKiB * 2}`);
  const members = [
    { email: "ok1@example.org", emailVerified: true, passwordHash: F.bcrypt2a },
    { email: "cost-bcrypt@example.org", emailVerified: true, passwordHash: tooCostlyBcrypt },
    { email: "cost-scrypt@example.org", emailVerified: true, passwordHash: tooCostlyScrypt },
    { email: "cost-django@example.org", emailVerified: true, passwordHash: tooCostlyDjango },
    { email: "cost-aspnet@example.org", emailVerified: true, passwordHash: aspnet.toString("base64") },
    { email: "cost-argon2@example.org", emailVerified: true, passwordHash: tooCostlyArgon2 },
    { email: "md5@example.org", emailVerified: true, passwordHash: "5f4dcc3b5aa765d61d8327deb882cf99" },
    { email: "bad-bcrypt@example.org", emailVerified: true, passwordHash: "$2b$10$short" },
    { email: "twice-m@example.org", emailVerified: true, passwordHash: F.argon2Published.hash.replace("t=2", "m=8") },
    { email: "firebase@example.org", emailVerified: true, passwordHash: FIREBASE_HASH },
    { email: "not an email", emailVerified: true },
    { email: "ok2@example.org", emailVerified: true, totpSecret: "not base32!" },
    { email: "ok3@example.org", emailVerified: true, createdAt: "2999-01-01T00:00:00Z" },
    { email: "ok4@example.org", emailVerified: true, name: "Eve\u202egnp.exe" },
    { email: "ok5@example.org", emailVerified: true },
  ];
  const answer = await imported(h, { members });
  assert.deepEqual(answer.refused, [
    { index: 1, reason: "hash_cost_too_high" },
    { index: 2, reason: "hash_cost_too_high" },
    { index: 3, reason: "hash_cost_too_high" },
    { index: 4, reason: "hash_cost_too_high" },
    { index: 5, reason: "hash_cost_too_high" },
    { index: 6, reason: "unknown_hash_format" },
    { index: 7, reason: "malformed_hash" },
    { index: 8, reason: "malformed_hash" },
    { index: 9, reason: "firebase_params_missing" },
    { index: 10, reason: "invalid_email" },
    { index: 11, reason: "invalid_totp_secret" },
    { index: 12, reason: "invalid_created_at" },
    { index: 13, reason: "invalid_name" },
  ]);
  assert.equal(answer.imported, 2);
  assert.deepEqual(answer.formats, { argon2: 0, bcrypt: 1, scrypt: 0, firebaseScrypt: 0, pbkdf2Django: 0, pbkdf2AspNet: 0, none: 1 });
  assert.equal(await memberCount(h), 2);
  // A member without a password is a magic-link member.
  const none = await h.db.selectFrom("members").selectAll().where("email", "=", "ok5@example.org").executeTakeFirstOrThrow();
  assert.equal(none.password_hash, null);
  assert.equal(none.has_magic_link_auth, 1);

  // Bad types and too many members are the whole call's 400; bad Firebase parameters too.
  assertError(await importCall(h, { members: [{ email: 1, emailVerified: true }] }), 400, "validation_failed");
  assertError(
    await importCall(h, { members: Array.from({ length: 1001 }, (_, i) => ({ email: `m${i}@example.org`, emailVerified: true })) }),
    400,
    "validation_failed",
  );
  const costly = { ...F.firebasePublished.params, memCost: 21 };
  assertError(await importCall(h, { members: [], firebaseScrypt: costly }), 400, "validation_failed");
  // Without the admin key: 401, nothing imported.
  const noKey = await adminRequest(h, "POST", "/auth/admin/members/import", { members: [{ email: "x@example.org", emailVerified: true }] }, { key: null });
  assert.equal(noKey.statusCode, 401, noKey.body);
  assert.equal(await memberCount(h), 2);
});

test("D29 dry run writes nothing; a second run imports nothing new; an existing email is skipped, never overwritten", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const members = [
    { email: "a@example.org", emailVerified: true, passwordHash: F.django },
    { email: "b@example.org", emailVerified: true, passwordHash: F.scrypt },
    { email: "A@example.org", emailVerified: true, passwordHash: F.bcrypt2b }, // the same email, met again in the call
    { email: "c@example.org", emailVerified: true, passwordHash: FIREBASE_HASH },
  ];
  const body = { members, firebaseScrypt: F.firebasePublished.params };
  const dry = await imported(h, body, true);
  assert.equal(dry.dryRun, true);
  assert.equal(dry.imported, 3);
  assert.equal(dry.skipped, 1);
  assert.equal(dry.formats["pbkdf2Django"], 1);
  assert.equal(await memberCount(h), 0);
  assert.equal((await h.db.selectFrom("imported_hash_params").select("id").execute()).length, 0);
  assert.equal(
    (
      await h.db
        .selectFrom("audit_events")
        .select("id")
        .where("tenant_id", "=", await tenantIdOf(h))
        .execute()
    ).length,
    0,
  );

  const first = await imported(h, body);
  assert.deepEqual([first.imported, first.skipped], [3, 1]);
  assert.equal(await storedHash(h, "a@example.org"), `foreign:${F.django}`);
  const second = await imported(h, body);
  assert.deepEqual([second.imported, second.skipped, second.refused.length], [0, 4, 0]);
  assert.equal(await memberCount(h), 3);
  assert.equal((await h.db.selectFrom("imported_hash_params").select("id").execute()).length, 1, "one row for one project's parameters");

  // An existing member's hash is never replaced by an import.
  const other = await imported(h, { members: [{ email: "a@example.org", emailVerified: true, passwordHash: F.bcrypt2a, name: "Impostor" }] });
  assert.deepEqual([other.imported, other.skipped], [0, 1]);
  assert.equal(await storedHash(h, "a@example.org"), `foreign:${F.django}`);
  assert.equal((await login(h, "a@example.org", F.password)).statusCode, 200);
  // The admin's export never shows the hash.
  const row = await h.db.selectFrom("members").select("id").where("email", "=", "b@example.org").executeTakeFirstOrThrow();
  const exported = await adminRequest(h, "GET", `/auth/admin/members/${row.id}/export`);
  assert.equal(exported.statusCode, 200, exported.body);
  assert.ok(!exported.body.includes("foreign:") && !exported.body.includes("$scrypt$"), exported.body);
});

test("D29 emailVerified false makes a pending account: the old password hears email_not_verified, a wrong one 401", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await imported(h, { members: [{ email: "pending@example.org", emailVerified: false, passwordHash: F.bcrypt2y, createdAt: 1_500_000_000_000 }] });
  const row = await h.db.selectFrom("members").selectAll().where("email", "=", "pending@example.org").executeTakeFirstOrThrow();
  assert.equal(row.status, "Email Verification Pending");
  assert.equal(row.password_hash, null);
  assertError(await login(h, "pending@example.org", F.password), 403, "email_not_verified");
  assertError(await login(h, "pending@example.org", "Wrong-Passw0rd!"), 401, "invalid_credentials");
});

/** POST /auth/resend-verification, delivered: the resend link's parts (it carries no password, contract.md#d18). */
async function resendLink(h: Harness, email: string): Promise<{ recordId: string; token: string }> {
  const res = await post(h, "/auth/resend-verification", { email, "bot-challenge-response": "x" }, { ip: nextIp() });
  assert.equal(res.statusCode, 200, res.body);
  await deliverWebhooks(h);
  const link = parseLink(lastWebhookFor(h, "verify_email", email).body.verificationLink!);
  return { recordId: link.recordId, token: link.token };
}

test("decisions.md#pending-imports: a pending imported member verifies with a resend link, weeks later, and signs in with the old password", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await imported(h, {
    members: [
      { email: "keeps@example.org", emailVerified: false, passwordHash: F.django },
      { email: "chooses@example.org", emailVerified: false, passwordHash: F.bcrypt2b },
      { email: "nopassword@example.org", emailVerified: false },
    ],
  });
  // Past any registration's link and its REGISTRATION_MEMORY_MS: the sweep keeps the imported password.
  h.clock.advance(30 * 24 * 60 * 60 * 1000);
  await h.deps.store.sweepExpired(h.clock.now());
  assertError(await login(h, "keeps@example.org", F.password), 403, "email_not_verified");

  const keeps = await resendLink(h, "keeps@example.org");
  // The hosted page says the old password stays unless another is chosen.
  const page = assertPage(await getPage(h, `/email-verified/${keeps.recordId}/${keeps.token}`));
  assert.ok(page.includes(KEEPS_IMPORTED_PASSWORD), page);
  const verified = await verify(h, keeps.recordId, keeps.token);
  assert.equal(verified.statusCode, 200, verified.body);
  const first = await login(h, "keeps@example.org", F.password);
  assert.equal(first.statusCode, 200, first.body);
  assert.match((await storedHash(h, "keeps@example.org"))!, /^\$argon2id\$/, "rehashed at the first login, as any imported member");
  assertError(await login(h, "keeps@example.org", "Wrong-Passw0rd!"), 401, "invalid_credentials");
  const registrations = await h.db.selectFrom("registrations").select("id").where("member_id", "=", Number(keeps.recordId)).execute();
  assert.deepEqual(registrations, [], "verification voids the imported password's registration like every other");

  // A password chosen with the link replaces the old one.
  const chooses = await resendLink(h, "chooses@example.org");
  const chosen = await post(h, "/auth/verify-email", { ...chooses, password: "New-Correct-Horse-7" });
  assert.equal(chosen.statusCode, 200, chosen.body);
  assertError(await login(h, "chooses@example.org", F.password), 401, "invalid_credentials");
  assert.equal((await login(h, "chooses@example.org", "New-Correct-Horse-7")).statusCode, 200);

  // Imported without a hash: the link does what it does for anyone (no password, magic link), and the page says so.
  const none = await resendLink(h, "nopassword@example.org");
  assert.ok(!assertPage(await getPage(h, `/email-verified/${none.recordId}/${none.token}`)).includes(KEEPS_IMPORTED_PASSWORD));
  const noneVerified = await verify(h, none.recordId, none.token);
  assert.equal(noneVerified.statusCode, 200, noneVerified.body);
  assert.equal(noneVerified.json<{ passwordSet?: boolean }>().passwordSet ?? false, false);
  assert.equal(await storedHash(h, "nopassword@example.org"), null);
});

test("externalId is in the admin's member view, list and export; null for a member who was not imported; not in /auth/me", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await imported(h, { members: [{ email: "mapped@example.org", emailVerified: true, passwordHash: F.scrypt, externalId: "auth0|5f7c8ec7c33c6c004bbafe82" }] });
  const nativeId = await registerVerifiedMember(h, "native@example.org");
  const mapped = await h.db.selectFrom("members").select("id").where("email", "=", "mapped@example.org").executeTakeFirstOrThrow();

  const one = await adminRequest(h, "GET", `/auth/admin/members/${mapped.id}`);
  assert.equal(one.statusCode, 200, one.body);
  assert.equal(one.json<{ externalId: string | null }>().externalId, "auth0|5f7c8ec7c33c6c004bbafe82");
  const native = await adminRequest(h, "GET", `/auth/admin/members/${nativeId}`);
  assert.equal(native.json<{ externalId: string | null }>().externalId, null);
  const list = await adminRequest(h, "GET", "/auth/admin/members");
  assert.equal(list.statusCode, 200, list.body);
  const byEmail = new Map(list.json<{ members: { email: string; externalId: string | null }[] }>().members.map((m) => [m.email, m.externalId]));
  assert.deepEqual([byEmail.get("mapped@example.org"), byEmail.get("native@example.org")], ["auth0|5f7c8ec7c33c6c004bbafe82", null]);
  const exported = await adminRequest(h, "GET", `/auth/admin/members/${mapped.id}/export`);
  assert.equal(exported.json<{ member: { externalId: string | null } }>().member.externalId, "auth0|5f7c8ec7c33c6c004bbafe82");

  const cookie = await loginCookie(h, "mapped@example.org", F.password);
  const me = await get(h, "/auth/me", { cookie });
  assert.equal(me.statusCode, 200, me.body);
  assert.ok(!("externalId" in me.json<Record<string, unknown>>()), me.body);
});

test("D29 a member imported with totpSecret must pass the second step; the hash is replaced only then", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await imported(h, {
    members: [{ email: "otp@example.org", emailVerified: true, passwordHash: F.aspnetSha512, totpSecret: TOTP_SECRET.toLowerCase(), externalId: "auth0|42" }],
  });
  const row = await h.db.selectFrom("members").selectAll().where("email", "=", "otp@example.org").executeTakeFirstOrThrow();
  assert.equal(row.two_factor_status, "Enabled");
  assert.equal(row.external_id, "auth0|42");
  assert.ok(row.totp_secret_enc && !row.totp_secret_enc.includes(TOTP_SECRET));
  const first = await login(h, "otp@example.org", F.password);
  assert.equal(first.statusCode, 200, first.body);
  assert.equal(first.json<{ authorized: boolean }>().authorized, false, "the second factor is required");
  assert.ok((await storedHash(h, "otp@example.org"))!.startsWith("foreign:"));
  const withCode = await post(h, "/auth/login", {
    email: "otp@example.org",
    password: F.password,
    "bot-challenge-response": "x",
    twoFACode: totpAt(TOTP_SECRET, h.clock.now()),
  });
  assert.equal(withCode.statusCode, 200, withCode.body);
  assert.equal(withCode.json<{ authorized: boolean }>().authorized, true);
  assert.match((await storedHash(h, "otp@example.org"))!, /^\$argon2id\$/);
});

test("D29 change-password accepts a foreign hash as the current password", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await imported(h, { members: [{ email: "change@example.org", emailVerified: true, passwordHash: F.django }] });
  const cookie = await loginCookie(h, "change@example.org", F.password);
  // A session of a member whose hash is still foreign (as one opened by a magic link would be).
  await h.db
    .updateTable("members")
    .set({ password_hash: `foreign:${F.django}` })
    .where("email", "=", "change@example.org")
    .execute();
  assertError(await changePassword(h, cookie, "Wrong-Passw0rd!", "New-Correct-Horse-7"), 401, "invalid_credentials");
  const changed = await changePassword(h, cookie, F.password, "New-Correct-Horse-7");
  assert.equal(changed.statusCode, 200, changed.body);
  assert.match((await storedHash(h, "change@example.org"))!, /^\$argon2id\$/);
});

test("D29 latch import: JSON lines in batches, refusals by line number, Firebase parameters as the console names them, dry run", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const dir = mkdtempSync(join(tmpdir(), "latch-import-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const lines: string[] = [];
  for (let i = 0; i < 1203; i++) lines.push(JSON.stringify({ email: `member${i}@example.org`, emailVerified: true }));
  lines[4] = "{not json";
  lines[1100] = JSON.stringify({ email: "member1100@example.org", emailVerified: true, passwordHash: "md5$abc" });
  lines.push("");
  lines.push(JSON.stringify({ email: "firebase@example.org", emailVerified: true, passwordHash: FIREBASE_HASH }));
  const file = join(dir, "members.jsonl");
  writeFileSync(file, `${lines.join("\n")}\n`);
  const params = join(dir, "firebase.json");
  const p = F.firebasePublished.params;
  writeFileSync(
    params,
    JSON.stringify({ algorithm: "SCRYPT", base64_signer_key: p.signerKey, base64_salt_separator: p.saltSeparator, rounds: p.rounds, mem_cost: p.memCost }),
  );

  const progress: string[] = [];
  const dry = await runImportCommand(h.deps, file, { tenant: h.tenant.domain, "dry-run": true, "firebase-scrypt": params }, (l) => progress.push(l));
  assert.deepEqual(dry.refused, [
    { index: 5, reason: "invalid_json" },
    { index: 1101, reason: "unknown_hash_format" },
  ]);
  assert.equal(dry.imported, 1202);
  assert.equal(await memberCount(h), 0);
  assert.ok(progress.length >= 2, progress.join("\n"));

  const real = await runImportCommand(h.deps, file, { tenant: h.tenant.domain, "firebase-scrypt": params }, () => undefined);
  assert.deepEqual([real.imported, real.skipped, real.refused.length, real.formats["firebaseScrypt"]], [1202, 0, 2, 1]);
  assert.equal(await memberCount(h), 1202);
  assert.equal((await login(h, "firebase@example.org", F.firebasePublished.password)).statusCode, 200);
  const again = await runImportCommand(h.deps, file, { tenant: h.tenant.domain, "firebase-scrypt": params }, () => undefined);
  assert.deepEqual([again.imported, again.skipped], [0, 1202]);
});

test("D29 latch import as a process: the answer on stdout, usage errors as exit 2, an unknown tenant exit 1", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const dir = mkdtempSync(join(tmpdir(), "latch-import-cli-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, "members.jsonl");
  const fb = JSON.stringify({ email: "fb@example.org", emailVerified: true, passwordHash: FIREBASE_HASH });
  writeFileSync(file, `${JSON.stringify({ email: "cli@example.org", emailVerified: true, passwordHash: F.scrypt })}\nnot json\n${fb}\n`);
  const params = join(dir, "firebase.json");
  writeFileSync(params, JSON.stringify(F.firebasePublished.params));
  const env = { ...process.env, DATABASE_URL: h.config.databaseUrl, SECRETS_KEY: "11".repeat(32), SECRETS_KEY_PREVIOUS: "", LOG_LEVEL: "warn" };
  const latch = async (args: string[]) => {
    try {
      const { stdout, stderr } = await run(process.execPath, ["--import", "tsx", "src/cli/main.ts", ...args], { env });
      return { code: 0, stdout, stderr };
    } catch (err) {
      return err as { code: number; stdout: string; stderr: string };
    }
  };
  const dry = await latch(["import", "--tenant", h.tenant.domain, file, "--dry-run", "--firebase-scrypt", params]);
  assert.equal(dry.code, 0, dry.stderr);
  const dryReport = JSON.parse(dry.stdout) as Answer;
  assert.deepEqual([dryReport.dryRun, dryReport.imported, dryReport.refused], [true, 2, [{ index: 2, reason: "invalid_json" }]]);
  assert.equal(await memberCount(h), 0);
  const real = await latch(["import", "--tenant", h.tenant.domain, file]);
  assert.equal(real.code, 0, real.stderr);
  assert.deepEqual((JSON.parse(real.stdout) as Answer).refused, [
    { index: 2, reason: "invalid_json" },
    { index: 3, reason: "firebase_params_missing" },
  ]);
  assert.equal((await login(h, "cli@example.org", F.password)).statusCode, 200);
  assert.equal((await latch(["import", file])).code, 2, "no --tenant");
  const unknown = await latch(["import", "--tenant", "nobody.example.com", file]);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /not_found/);
});
