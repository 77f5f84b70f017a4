/** Edge cases of the second factor that earlier reviews found: concurrency and an unreadable secret. */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  createHarness,
  deliverWebhooks,
  login,
  parseLink,
  post,
  registerVerifiedMember,
  sessionCookieOf,
  STRONG_PASSWORD,
  type Harness,
} from "./support/harness.js";
import { yieldingTransactions } from "./support/flows.js";
import { totpAt } from "./support/totp.js";

async function enrol(h: Harness, email: string): Promise<{ secret: string; recoveryCodes: string[] }> {
  const cookie = sessionCookieOf(await login(h, email))!;
  const { secret } = (await post(h, "/auth/2fa/setup", { password: STRONG_PASSWORD }, { cookie })).json<{ secret: string }>();
  const enabled = await post(h, "/auth/2fa/enable", { code: totpAt(secret, h.clock.now()) }, { cookie });
  assert.equal(enabled.statusCode, 200, enabled.body);
  return { secret, recoveryCodes: enabled.json().recoveryCodes as string[] };
}

test("regression: two concurrent submissions of one magic link with 2FA give one session and spend one code", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  yieldingTransactions(t);
  await registerVerifiedMember(h, "race@example.org");
  const { recoveryCodes } = await enrol(h, "race@example.org");
  await post(h, "/auth/request-magic-link", { email: "race@example.org", "bot-challenge-response": "x" });
  await deliverWebhooks(h);
  const link = parseLink(h.receiver.last("magic_login").body.magicLoginLink!);
  const submit = (code: string) => post(h, `/auth/verify-magic-link/${link.recordId}/${link.token}`, { "bot-challenge-response": "x", twoFACode: code });
  const [a, b] = await Promise.all([submit(recoveryCodes[0]!), submit(recoveryCodes[1]!)]);
  const statuses = [a.statusCode, b.statusCode].sort();
  assert.deepEqual(statuses, [200, 400], `${a.body} ${b.body}`);
  const loser = a.statusCode === 400 ? recoveryCodes[0]! : recoveryCodes[1]!;
  const later = await post(h, "/auth/login", { email: "race@example.org", password: STRONG_PASSWORD, twoFACode: loser, "bot-challenge-response": "x" });
  assert.equal(later.statusCode, 200, "the losing submission did not spend its recovery code");
});

test("a recovery code works even when the TOTP secret can't be decrypted", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "lost@example.org");
  const { recoveryCodes } = await enrol(h, "lost@example.org");
  await h.db.updateTable("members").set({ totp_secret_enc: "v1.AAAA.AAAA.AAAA" }).where("email", "=", "lost@example.org").execute();
  const res = await post(h, "/auth/login", {
    email: "lost@example.org",
    password: STRONG_PASSWORD,
    twoFACode: recoveryCodes[0]!.toUpperCase(),
    "bot-challenge-response": "x",
  });
  assert.equal(res.statusCode, 200, res.body);
});

test("recovery codes are 80 bits in four groups and hashed per member", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "a@example.org");
  await registerVerifiedMember(h, "b@example.org");
  const { recoveryCodes } = await enrol(h, "a@example.org");
  for (const code of recoveryCodes) assert.match(code, /^[a-z0-9]{4}(-[a-z0-9]{4}){3}$/);
  // A's code is no code of B's, even though both tables hold hashes only.
  await enrol(h, "b@example.org");
  const asB = await post(h, "/auth/login", { email: "b@example.org", password: STRONG_PASSWORD, twoFACode: recoveryCodes[0]!, "bot-challenge-response": "x" });
  assert.equal(asB.statusCode, 401);
  assert.equal(asB.json().code, "invalid_2fa_code");
});
