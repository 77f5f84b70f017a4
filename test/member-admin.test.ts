/**
 * D22: the tenant admin's member calls (list and search, one member, export, erasure, ending
 * sessions), each with the tenant's key and only for the tenant's own members. Runs on SQLite and
 * PostgreSQL (LATCH_TEST_STORE). Erasure is proven by reading every table of the database for the
 * member's record id and email afterwards.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createTenant } from "../src/flows/tenants/tenants.js";
import { assertErrorNoExtras, ok } from "./support/assertions.js";
import { rowsHolding } from "./support/database.js";
import {
  adminRequest,
  enrolTwoFactor,
  forgotPassword,
  nextIp,
  receiverSettings,
  registerPending,
  storeTenantSettings,
  tenantIdOf,
  WRONG_PASSWORD,
} from "./support/flows.js";
import { createHarness, deliverWebhooks, get, login, parseLink, post, registerVerifiedMember, sessionCookieOf, STRONG_PASSWORD } from "./support/harness.js";

const SAME_APP_DOMAIN = "second.example.com";

interface ListedMember {
  recordid: string;
  email: string;
  authentication_status: string;
  createdAt: string;
  lastLoginAt: string | null;
}
interface MemberPage {
  members: ListedMember[];
  nextCursor: string | null;
}

test("D22 list: newest first, cursor pages, exact and prefix email (LIKE characters literal), status filter, lastLoginAt", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const emails = ["ann@example.org", "a_b@example.org", "axb@example.org", "bob@example.org", "a%c@example.org"];
  const ids: string[] = [];
  for (const email of emails) {
    ids.push(await registerVerifiedMember(h, email, STRONG_PASSWORD, nextIp()));
    h.clock.advance(1000);
  }
  const { recordId: pendingId } = await registerPending(h, "pending@example.org");

  const pages: ListedMember[][] = [];
  let cursor: string | null = null;
  do {
    const page: MemberPage = ok<MemberPage>(await adminRequest(h, "GET", `/auth/admin/members?limit=2${cursor ? `&cursor=${cursor}` : ""}`));
    pages.push(page.members);
    cursor = page.nextCursor;
  } while (cursor !== null);
  assert.deepEqual(
    pages.map((p) => p.length),
    [2, 2, 2],
  );
  assert.deepEqual(
    pages.flat().map((m) => m.recordid),
    [pendingId, ...ids.slice().reverse()],
    "newest first, each member once",
  );

  const listed = async (query: string) =>
    ok<MemberPage>(await adminRequest(h, "GET", `/auth/admin/members?${query}`))
      .members.map((m) => m.email)
      .sort();
  assert.deepEqual(await listed("email=BOB@example.org"), ["bob@example.org"], "exact, case-insensitive");
  assert.deepEqual(await listed("email=bo"), [], "without * the email must match whole");
  assert.deepEqual(await listed(`email=${encodeURIComponent("a*")}`), ["a%c@example.org", "a_b@example.org", "ann@example.org", "axb@example.org"]);
  assert.deepEqual(await listed(`email=${encodeURIComponent("a_*")}`), ["a_b@example.org"], "_ is not a wildcard");
  assert.deepEqual(await listed(`email=${encodeURIComponent("a%*")}`), ["a%c@example.org"], "% is not a wildcard");
  assert.deepEqual(await listed(`status=${encodeURIComponent("Email Verification Pending")}`), ["pending@example.org"]);

  const before = ok<MemberPage>(await adminRequest(h, "GET", "/auth/admin/members?email=bob@example.org")).members[0]!;
  assert.equal(before.lastLoginAt, null);
  assert.equal(before.createdAt, new Date(Date.parse(before.createdAt)).toISOString());
  assert.equal((await login(h, "bob@example.org")).statusCode, 200);
  const after = ok<MemberPage>(await adminRequest(h, "GET", "/auth/admin/members?email=bob@example.org")).members[0]!;
  assert.equal(after.lastLoginAt, new Date(h.clock.now()).toISOString());

  assertErrorNoExtras(await adminRequest(h, "GET", "/auth/admin/members?cursor=bm9wZQ"), 400, "validation_failed");
  assertErrorNoExtras(await adminRequest(h, "GET", "/auth/admin/members?status=Deleted"), 400, "validation_failed");
  assertErrorNoExtras(await adminRequest(h, "GET", "/auth/admin/members?limit=-1"), 400, "validation_failed");
  assert.equal(ok<MemberPage>(await adminRequest(h, "GET", "/auth/admin/members?limit=999")).members.length, 6, "limit is capped, not refused");
});

test("D22 get and export: the member's fields, live sessions counted, history and audit events, and no secret", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const email = "export@example.org";
  const recordId = await registerVerifiedMember(h, email);
  const first = await login(h, email);
  const cookie = sessionCookieOf(first)!;
  await login(h, email, STRONG_PASSWORD, { ip: "198.51.100.200" });
  assert.equal(ok(await adminRequest(h, "GET", `/auth/admin/members/${recordId}`)).sessions, 2, "live sessions counted");
  const { secret } = await enrolTwoFactor(h, cookie); // ends the other session

  const member = ok(await adminRequest(h, "GET", `/auth/admin/members/${recordId}`));
  assert.deepEqual(Object.keys(member).sort(), [
    "_2fa_status",
    "authentication_status",
    "authentication_type",
    "createdAt",
    "email",
    "externalId",
    "lastLoginAt",
    "name",
    "passkeys",
    "recordid",
    "sessions",
    "success",
  ]);
  assert.equal(member.email, email);
  assert.equal(member.externalId, null, "not imported (decisions.md#importing-members)");
  assert.equal(member._2fa_status, "Enabled");
  assert.deepEqual(member.authentication_type, ["Password"]);
  assert.equal(member.sessions, 1);
  assert.equal(member.passkeys, 0);

  const exported = await adminRequest(h, "GET", `/auth/admin/members/${recordId}/export`);
  const body = ok<{ member: Record<string, unknown>; sessions: unknown[]; loginHistory: { kind: string; value: string }[]; auditEvents: { type: string }[] }>(
    exported,
  );
  assert.equal(body.member.email, email);
  assert.equal(body.member.hasPassword, true);
  assert.equal(body.sessions.length, 1);
  assert.ok(
    body.loginHistory.some((o) => o.kind === "network" && o.value.startsWith("198.51.100.")),
    JSON.stringify(body.loginHistory),
  );
  for (const type of ["registered", "email_verified", "login_succeeded", "two_factor_enabled"]) {
    assert.ok(
      body.auditEvents.some((e) => e.type === type),
      `export has ${type}: ${body.auditEvents.map((e) => e.type).join(",")}`,
    );
  }
  const stored = await h.db.selectFrom("members").select(["password_hash", "totp_secret_enc"]).where("id", "=", Number(recordId)).executeTakeFirstOrThrow();
  for (const [label, value] of [
    ["password hash", stored.password_hash],
    ["sealed TOTP secret", stored.totp_secret_enc],
    ["TOTP secret", secret],
    ["session id", cookie],
  ] as const) {
    assert.ok(value && !exported.body.includes(value), `${label} in the export`);
  }
  assert.doesNotMatch(exported.body, /argon2|id_hash|token/i);
});

test("D22 revoke-sessions: every session of the member ends, other members keep theirs, audited", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, "revoke@example.org");
  await registerVerifiedMember(h, "keep@example.org");
  const cookies = [sessionCookieOf(await login(h, "revoke@example.org"))!, sessionCookieOf(await login(h, "revoke@example.org"))!];
  const other = sessionCookieOf(await login(h, "keep@example.org"))!;
  assert.deepEqual(ok(await adminRequest(h, "POST", "/auth/admin/revoke-sessions", { recordId })), { success: true, recordid: recordId });
  for (const cookie of cookies) assert.equal((await get(h, "/auth/session", { cookie })).statusCode, 401);
  assert.equal((await get(h, "/auth/session", { cookie: other })).statusCode, 200);
  const audit = ok<{ events: { type: string }[] }>(await adminRequest(h, "GET", `/auth/admin/audit-log?recordId=${recordId}`));
  assert.equal(audit.events[0]!.type, "sessions_revoked");
});

test("D22 delete: the member and every row keyed to them are erased in every table; one audit row and member.deleted remain, with no email", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const url = `${h.receiver.url}/events`;
  await storeTenantSettings(h, { eventsWebhook: url, securityAlertWebhook: `${h.receiver.url}/alert` });

  const email = "erase.me@example.org";
  const recordId = await registerVerifiedMember(h, email);
  await registerVerifiedMember(h, "bystander@example.org");
  const cookie = sessionCookieOf(await login(h, email))!;
  await enrolTwoFactor(h, cookie); // TOTP secret, recovery codes, a security alert
  assert.equal((await login(h, email, WRONG_PASSWORD)).statusCode, 401); // a lockout row keyed by the email
  assert.equal((await forgotPassword(h, email)).statusCode, 200); // a reset link and its delivery, not yet sent
  await h.deps.store.emailRequests.insertEmailRequest(
    { id: "waiting-request", tenantId: await tenantIdOf(h), kind: "password_reset", email, ip: "203.0.113.10", userAgent: null },
    h.clock.now(),
  );
  assert.ok((await rowsHolding(h, { exact: [recordId], contained: [email] })).length >= 10, "the member is all over the database before");

  const deleted = await adminRequest(h, "DELETE", `/auth/admin/members/${recordId}`);
  assert.deepEqual(ok(deleted), { success: true, recordid: recordId });

  const left = await rowsHolding(h, { exact: [recordId], contained: [email] });
  assert.equal(left.length, 2, left.join("\n"));
  assert.ok(
    left.some((row) => row.startsWith("audit_events:") && row.includes('"member_deleted"')),
    left.join("\n"),
  );
  assert.ok(
    left.some((row) => row.startsWith("webhook_deliveries:") && row.includes('"member.deleted"')),
    left.join("\n"),
  );
  assert.ok(left.every((row) => !row.includes(email)));

  // The waiting reset request went too: the worker sends nothing about the member.
  const received = h.receiver.received.length;
  await deliverWebhooks(h);
  // Of what is sent now, only member.deleted names the member (the bystander's member.created is theirs).
  const events = h.receiver.received.slice(received).filter((e) => e.body.recordid === recordId || e.body.email === email);
  assert.deepEqual(
    events.map((e) => e.body.event_type),
    ["member.deleted"],
  );
  assert.deepEqual(Object.keys(events[0]!.body).sort(), ["at", "event_type", "recordid"]);
  assert.equal(events[0]!.body.recordid, recordId);
  assert.equal(events[0]!.path, "/events");

  assert.equal((await get(h, "/auth/session", { cookie })).statusCode, 401);
  assert.equal((await login(h, email)).statusCode, 401);
  assertErrorNoExtras(await adminRequest(h, "GET", `/auth/admin/members/${recordId}`), 404, "not_found");
  assertErrorNoExtras(await adminRequest(h, "DELETE", `/auth/admin/members/${recordId}`), 404, "not_found");
  // D30: the audit log still shows what erasure kept, the member_deleted row (and nothing else).
  const audit = ok<{ events: { type: string; details: Record<string, unknown> }[] }>(
    await adminRequest(h, "GET", `/auth/admin/audit-log?recordId=${recordId}`),
  );
  assert.deepEqual(
    audit.events.map((e) => [e.type, e.details]),
    [["member_deleted", { by: "admin" }]],
  );
  assert.equal((await login(h, "bystander@example.org")).statusCode, 200, "other members are untouched");
  // The email is free again: a new registration makes a new member.
  const again = await registerVerifiedMember(h, email, STRONG_PASSWORD, nextIp());
  assert.notEqual(again, recordId);
});

test("D22 tenant isolation: each call with another tenant's record id is 404 (same application, same key), another application's key 403", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await createTenant(h.deps, { domain: SAME_APP_DOMAIN, applicationId: h.tenant.applicationId, settings: receiverSettings(h) });
  const theirs = await registerVerifiedMember(h, "theirs@example.org", STRONG_PASSWORD, nextIp());
  await post(h, "/auth/login", { email: "theirs@example.org", password: STRONG_PASSWORD, "bot-challenge-response": "x" });
  // A member of the second tenant, asked for through the first tenant's domain with the shared key.
  const response = await post(
    h,
    "/auth/register-password",
    { email: "second@example.org", name: "Second", password: STRONG_PASSWORD },
    { domain: SAME_APP_DOMAIN, ip: nextIp() },
  );
  assert.equal(response.statusCode, 200, response.body);
  await deliverWebhooks(h);
  const foreign = parseLink(h.receiver.last("verify_email").body.verificationLink!).recordId;
  for (const [method, url, body] of [
    ["GET", `/auth/admin/members/${foreign}`, undefined],
    ["GET", `/auth/admin/members/${foreign}/export`, undefined],
    ["DELETE", `/auth/admin/members/${foreign}`, undefined],
    ["POST", "/auth/admin/revoke-sessions", { recordId: foreign }],
    ["GET", "/auth/admin/members/not-a-number", undefined],
  ] as const) {
    assertErrorNoExtras(await adminRequest(h, method, url, body), 404, "not_found");
  }
  const listed = ok<MemberPage>(await adminRequest(h, "GET", "/auth/admin/members")).members.map((m) => m.recordid);
  assert.deepEqual(listed, [theirs], "the list holds the tenant's own members only");
  assert.equal(ok<MemberPage>(await adminRequest(h, "GET", "/auth/admin/members", undefined, { domain: SAME_APP_DOMAIN })).members[0]!.recordid, foreign);
  assert.equal(ok(await adminRequest(h, "GET", `/auth/admin/members/${foreign}`, undefined, { domain: SAME_APP_DOMAIN })).recordid, foreign, "still there");

  const other = await createTenant(h.deps, { domain: "b.example.com", settings: receiverSettings(h) });
  const withOtherKey = (method: "GET" | "DELETE", url: string) =>
    h.app.inject({ method, url, headers: { "x-tenant-domain": h.tenant.domain, authorization: `Bearer ${other.internalApiKey!}` } });
  assertErrorNoExtras(await withOtherKey("GET", "/auth/admin/members"), 403, "forbidden");
  assertErrorNoExtras(await withOtherKey("DELETE", `/auth/admin/members/${theirs}`), 403, "forbidden");
  assertErrorNoExtras(await h.app.inject({ method: "GET", url: "/auth/admin/members", headers: { "x-tenant-domain": h.tenant.domain } }), 401, "unauthorized");
  assert.equal(ok(await adminRequest(h, "GET", `/auth/admin/members/${theirs}`)).recordid, theirs, "nothing was deleted");
});
