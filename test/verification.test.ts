/**
 * Email verification through HTTP (spec 4.1; DECISIONS D7, D18), src/flows/registration/verification.ts: using a
 * verification link, its lifetime, single use under concurrency, and tenant isolation. Which link a
 * registration or a resend sends is in registration.test.ts; the D18 attack in pre-hijack.test.ts.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { HOUR, SECOND } from "../src/core/clock.js";
import { assertError, assertVerified } from "./support/assertions.js";
import { addOtherTenant, OTHER_DOMAIN, registerPending, requestResetLink, verify } from "./support/flows.js";
import { yieldingTransactions } from "./support/store-seam.js";
import { createHarness, login } from "./support/harness.js";

test("verify-email: success body; a second use of the same token is invalid_token", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { recordId, token } = await registerPending(h, "ada@example.org");
  assertVerified(await verify(h, recordId, token));
  assertError(await verify(h, recordId, token), 400, "invalid_token");
  assert.equal((await login(h, "ada@example.org")).statusCode, 200);
});

test("verify-email: the token lasts 24 h and is invalid_token one second after", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const early = await registerPending(h, "early@example.org");
  const late = await registerPending(h, "late@example.org");
  h.clock.advance(24 * HOUR - SECOND);
  assertVerified(await verify(h, early.recordId, early.token));
  h.clock.advance(2 * SECOND);
  assertError(await verify(h, late.recordId, late.token), 400, "invalid_token");
  assertError(await login(h, "late@example.org"), 403, "email_not_verified");
});

test("verify-email: a password reset token is not accepted as a verification token", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { recordId } = await registerPending(h, "ada@example.org");
  const resetLink = await requestResetLink(h, "ada@example.org");
  assert.equal(resetLink.recordId, recordId);
  assertError(await verify(h, recordId, resetLink.token), 400, "invalid_token");
  assertError(await login(h, "ada@example.org"), 403, "email_not_verified");
});

test("verify-email: the right token with another member's recordId is invalid_token and does not use the token up", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const ada = await registerPending(h, "ada@example.org");
  const bob = await registerPending(h, "bob@example.org");
  assertError(await verify(h, bob.recordId, ada.token), 400, "invalid_token");
  // A made-up id in range.
  assertError(await verify(h, "123456789012345", ada.token), 400, "invalid_token");
  assertError(await login(h, "bob@example.org"), 403, "email_not_verified");
  assertVerified(await verify(h, ada.recordId, ada.token));
});

test("verify-email: a recordId that is not digits is refused with a 4xx (invalid_token or validation_failed)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const { token } = await registerPending(h, "ada@example.org");
  for (const recordId of ["abc", "12ab34", "-1", "1e15", " 123456789012345", "99999999999999999999"]) {
    const res = await verify(h, recordId, token);
    assert.ok(res.statusCode >= 400 && res.statusCode < 500, `${recordId}: ${res.statusCode} ${res.body}`);
    const code = res.json<{ code: string }>().code;
    assert.ok(code === "invalid_token" || code === "validation_failed", `${recordId}: ${res.body}`);
    assertError(res, res.statusCode, code);
  }
});

for (const parallel of [2, 10]) {
  test(`verify-email: ${parallel} concurrent uses of one token give exactly one 200 (D7)`, async (t) => {
    const h = await createHarness();
    t.after(() => h.close());
    yieldingTransactions(t);
    const { recordId, token } = await registerPending(h, "ada@example.org");
    const results = await Promise.all(Array.from({ length: parallel }, () => verify(h, recordId, token)));
    const ok = results.filter((r) => r.statusCode === 200);
    assert.equal(ok.length, 1, results.map((r) => `${r.statusCode} ${r.body}`).join("\n"));
    for (const r of results.filter((x) => x.statusCode !== 200)) assertError(r, 400, "invalid_token");
  });
}

test("tenants: a verification token of tenant A fails on tenant B", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await addOtherTenant(h);
  const { recordId, token } = await registerPending(h, "ada@example.org");
  assertError(await verify(h, recordId, token, { domain: OTHER_DOMAIN }), 400, "invalid_token");
  assertVerified(await verify(h, recordId, token));
});
