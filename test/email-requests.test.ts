/**
 * D19's worker (src/flows/kernel/email-requests.ts): the same storage work for a known and an unknown
 * email, nothing sent for the unknown one, and token issuing that stays atomic when several
 * workers (several instances) handle requests for one member at once (D20).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { processEmailRequests } from "../src/flows/kernel/email-requests.js";
import { rowCounts } from "./support/database.js";
import { createHarness, deliverWebhooks, parseLink, post, registerVerifiedMember, type Harness } from "./support/harness.js";

const TABLES = ["one_time_tokens", "webhook_deliveries", "audit_events", "registrations", "members", "email_requests"] as const;

function difference(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  return Object.fromEntries(TABLES.map((t) => [t, after[t]! - before[t]!]));
}

/** Rows each request adds, by table: the request itself (unsettled), then after the worker. */
async function footprint(
  h: Harness,
  path: string,
  body: Record<string, unknown>,
  ip: string,
): Promise<{ request: Record<string, number>; worker: Record<string, number> }> {
  // The unknown email's expired token under member 0 would otherwise be voided by the next one (the
  // same DELETE runs for a known member, finding nothing): start each case from a swept store.
  await h.deps.store.sweepExpired(h.clock.now());
  const start = await rowCounts(h, TABLES);
  const res = await h.app.inject({ method: "POST", url: path, payload: body, remoteAddress: ip, headers: { "x-tenant-domain": h.tenant.domain } });
  assert.equal(res.statusCode, 200, res.body);
  const requested = await rowCounts(h, TABLES);
  await processEmailRequests(h.deps);
  return { request: difference(requested, start), worker: difference(await rowCounts(h, TABLES), requested) };
}

test("every email request writes the same rows, in the request and in the worker, for known, unknown, locked and pending emails (D19)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "known@example.org");
  const locked = await registerVerifiedMember(h, "locked@example.org", undefined, "198.51.100.3");
  await post(h, "/auth/lock-account", { recordId: locked, action: "lock" }, { headers: { authorization: `Bearer ${h.tenant.internalApiKey}` } });
  await post(h, "/auth/register-magic-link", { email: "pending@example.org", name: "P", "bot-challenge-response": "x" }, { ip: "198.51.100.4" });
  const bot = { "bot-challenge-response": "x" };
  let ip = 20;
  const cases: [string, string[], (email: string) => Record<string, unknown>][] = [
    ["/auth/forgot-password", ["known@example.org", "nobody@example.org", "locked@example.org", "pending@example.org"], (email) => ({ email, ...bot })],
    ["/auth/request-magic-link", ["known@example.org", "nobody@example.org", "locked@example.org"], (email) => ({ email, ...bot })],
    ["/auth/resend-verification", ["pending@example.org", "nobody@example.org", "known@example.org", "locked@example.org"], (email) => ({ email, ...bot })],
    [
      "/auth/register-password",
      ["new@example.org", "pending@example.org", "known@example.org"],
      (email) => ({ email, name: "N", password: "Correct-Horse-42-Battery", ...bot }),
    ],
  ];
  for (const [path, emails, body] of cases) {
    const footprints = [];
    for (const email of emails) footprints.push({ email, ...(await footprint(h, path, body(email), `198.51.100.${ip++}`)) });
    const [first, ...rest] = footprints;
    for (const other of rest) {
      assert.deepEqual(other.request, first!.request, `${path}: the request for ${other.email} wrote other rows than for ${first!.email}`);
      // A new member row is the one difference a registration may make: the insert runs for every email and conflicts for a taken one.
      const worker = path === "/auth/register-password" ? { ...other.worker, members: first!.worker.members } : other.worker;
      assert.deepEqual(worker, first!.worker, `${path}: the worker wrote other rows for ${other.email} than for ${first!.email}`);
    }
    assert.deepEqual(first!.request, { one_time_tokens: 0, webhook_deliveries: 0, audit_events: 0, registrations: 0, members: 0, email_requests: 1 }, path);
  }
});

test("the rows written for an unknown email are never sent, hold no payload, and are swept at once (D19)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  assert.equal((await post(h, "/auth/forgot-password", { email: "nobody@example.org", "bot-challenge-response": "x" })).statusCode, 200);
  const rows = await h.db.selectFrom("webhook_deliveries").select(["status", "payload_enc"]).execute();
  assert.deepEqual(rows, [{ status: "discarded", payload_enc: null }]);
  assert.equal(await deliverWebhooks(h), 0);
  assert.equal(h.receiver.received.length, 0);
  const tokens = await h.db.selectFrom("one_time_tokens").select(["member_id", "expires_at"]).execute();
  assert.deepEqual(
    tokens.map((r) => Number(r.member_id)),
    [0],
  );
  assert.ok(
    tokens.every((r) => Number(r.expires_at) <= h.clock.now()),
    "written already expired",
  );
  await h.deps.store.sweepExpired(h.clock.now());
  assert.equal((await h.db.selectFrom("webhook_deliveries").select("id").execute()).length, 0);
  assert.equal((await h.db.selectFrom("one_time_tokens").select("token_hash").execute()).length, 0);
});

test("four forgot-password requests for one member handled by four concurrent workers leave one working reset link (D7, D20)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, "ada@example.org");
  for (let i = 0; i < 4; i++) {
    const res = await h.app.inject({
      method: "POST",
      url: "/auth/forgot-password",
      payload: { email: "ada@example.org", "bot-challenge-response": "x" },
      remoteAddress: `198.51.100.${40 + i}`,
      headers: { "x-tenant-domain": h.tenant.domain },
    });
    assert.equal(res.statusCode, 200, res.body);
  }
  // Four workers at once, as four instances would: each claims rows and issues in its own transaction.
  await Promise.all([1, 2, 3, 4].map(() => processEmailRequests(h.deps)));
  const live = await h.db
    .selectFrom("one_time_tokens")
    .select("token_hash")
    .where("member_id", "=", Number(recordId))
    .where("kind", "=", "password_reset")
    .where("expires_at", ">", h.clock.now())
    .execute();
  assert.equal(live.length, 1, "one live reset token");
  await deliverWebhooks(h);
  const links = h.receiver.ofType("password_reset").map((w) => parseLink(w.body.resetLink!));
  assert.equal(links.length, 4, "each request still sent its email");
  const results = [];
  for (const link of links)
    results.push((await post(h, "/auth/reset-password", { recordId: link.recordId, token: link.token, newPassword: "Brand-New-Pass-2026" })).statusCode);
  assert.equal(results.filter((s) => s === 200).length, 1, `exactly one link works: ${results.join(",")}`);
});
