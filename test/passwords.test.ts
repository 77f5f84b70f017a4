/**
 * The password policy and breach check through HTTP (spec 5.3; DECISIONS D4, D12),
 * src/flows/kernel/passwords.ts, shown at registration: the failed rules listed, nothing stored. Reset and
 * change apply the same checks (password-reset.test.ts, password-change.test.ts); the rules
 * themselves are unit-tested in units.test.ts, the breach providers in breach.test.ts.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { assertError, assertVerified, failedRulesOf } from "./support/assertions.js";
import { lastWebhookFor, register, verify } from "./support/flows.js";
import { createHarness, deliverWebhooks, login, parseLink, STRONG_PASSWORD } from "./support/harness.js";

const weakPasswords: Array<[string, string[]]> = [
  ["Ab1-xyz", ["min_length"]],
  ["lowercase-only-42", ["uppercase"]],
  ["UPPERCASE-ONLY-42", ["lowercase"]],
  ["NoDigitsNorSymbols", ["number_or_special"]],
  ["abc", ["min_length", "number_or_special", "uppercase"]],
  ["ABCDEFGHIJ", ["lowercase", "number_or_special"]],
];

test("password policy: each failing rule gives 400 weak_password listing exactly the failed rules", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  let n = 0;
  for (const [password, rules] of weakPasswords) {
    n += 1;
    const res = await register(h, `weak${n}@example.org`, password);
    const body = assertError(res, 400, "weak_password");
    assert.deepEqual(failedRulesOf(body), [...rules].sort(), `${password}: ${res.body}`);
  }
  assert.equal(await deliverWebhooks(h), 0);
  assert.equal(h.receiver.received.length, 0);
});

test("password policy: a common password gives 400 breached_password", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  assertError(await register(h, "ada@example.org", "Password123"), 400, "breached_password");
  assert.equal(await deliverWebhooks(h), 0);
});

test("password policy: nothing is stored when registration fails; a later good registration creates the member", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  assertError(await register(h, "ada@example.org", "weak"), 400, "weak_password");
  assertError(await register(h, "ada@example.org", "Password123"), 400, "breached_password");
  assert.equal(await deliverWebhooks(h), 0);
  assertError(await login(h, "ada@example.org", "Password123"), 401, "invalid_credentials");

  const good = await register(h, "ada@example.org", STRONG_PASSWORD);
  assert.equal(good.statusCode, 200, good.body);
  assert.equal(await deliverWebhooks(h), 1);
  const hook = lastWebhookFor(h, "verify_email", "ada@example.org");
  const link = parseLink(hook.body.verificationLink!);
  assert.equal(link.recordId, good.json().recordid, "a real member, not a decoy for an existing one");
  assertVerified(await verify(h, link.recordId, link.token));
  assert.equal((await login(h, "ada@example.org")).statusCode, 200);
});
