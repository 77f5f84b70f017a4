/**
 * Issue 13, finding 3 (D19): neither the answer of a request that may send an email nor the timing
 * of the NEXT request tells a known email from an unknown one. The service runs as in production
 * (the dispatcher started, woken right after each commit, delivering to a real local receiver).
 * For each endpoint, 400 requests alternate known and unknown emails in a seeded random order, each
 * followed at once by a probe request; a threshold classifier is trained on half of the pairs and
 * must stay near chance (50 %) on the other half, for the answer and for the probe.
 * A statistical comparison of two populations measured in one run, never a wall-clock assert.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test, type TestContext } from "node:test";
import { hashNewPassword } from "../src/flows/kernel/passwords.js";
import { MemberStatus } from "../src/model.js";
import { createHarness, login, STRONG_PASSWORD, type Harness } from "./support/harness.js";

const PAIRS = 400;
/** 200 test pairs: chance is 50 % with a standard deviation of 3.5 %; 62 % is more than 3 sigma. */
const MAX_ACCURACY = 0.62;

interface Sample {
  known: boolean;
  answerNs: number;
  nextNs: number;
}

/** A deterministic shuffle of known/unknown: half each. */
function seededOrder(seed: string): boolean[] {
  const order = Array.from({ length: PAIRS }, (_, i) => i % 2 === 0);
  for (let i = order.length - 1; i > 0; i--) {
    const j = createHash("sha256").update(`${seed}:${i}`).digest().readUInt32BE(0) % (i + 1);
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
}

/** Best single threshold (either direction) on the training half, scored on the test half. */
export function thresholdAccuracy(samples: { known: boolean; value: number }[]): number {
  const train = samples.filter((_, i) => i % 2 === 0);
  const check = samples.filter((_, i) => i % 2 === 1);
  let best = { threshold: 0, knownAbove: true, score: -1 };
  for (const candidate of train) {
    for (const knownAbove of [true, false]) {
      const score = train.filter((s) => s.value > candidate.value === (knownAbove ? s.known : !s.known)).length;
      if (score > best.score) best = { threshold: candidate.value, knownAbove, score };
    }
  }
  const right = check.filter((s) => s.value > best.threshold === (best.knownAbove ? s.known : !s.known)).length;
  return right / check.length;
}

/** Members inserted through the store with one precomputed hash: 200 registrations would take minutes of Argon2. */
async function seedMembers(h: Harness, prefix: string, count: number, verified: boolean): Promise<string[]> {
  const hash = await hashNewPassword(h.deps, STRONG_PASSWORD);
  const tenantId = (await h.deps.store.tenants.findTenantByDomain(h.tenant.domain))!.id;
  const emails: string[] = [];
  for (let i = 0; i < count; i++) {
    const email = `${prefix}-${i}@example.org`;
    const recordId = 10 ** 14 + i + (verified ? 0 : 10 ** 6);
    await h.deps.store.members.insertMember(
      tenantId,
      { recordId, email, name: "Known", passwordHash: null, passwordSalt: null, authenticationType: "Password" },
      0,
    );
    if (verified)
      await h.deps.store.members.activatePendingMember(
        tenantId,
        recordId,
        { name: "Known", passwordHash: hash.passwordHash, passwordSalt: hash.passwordSalt, authenticationType: "Password" },
        0,
      );
    emails.push(email);
  }
  const member = await h.deps.store.members.findMemberByEmail(tenantId, emails[0]!);
  assert.equal(member?.status, verified ? MemberStatus.unlocked : MemberStatus.pending);
  return emails;
}

async function timed(send: () => Promise<{ statusCode: number }>, expected: number): Promise<number> {
  const start = process.hrtime.bigint();
  const res = await send();
  const elapsed = Number(process.hrtime.bigint() - start);
  assert.equal(res.statusCode, expected);
  return elapsed;
}

let ipCounter = 0;
function nextIp(): string {
  ipCounter++;
  return `10.${(ipCounter >> 16) & 255}.${(ipCounter >> 8) & 255}.${ipCounter & 255}`;
}

async function measure(h: Harness, path: string, knownEmails: string[], expected: number, body: (email: string) => Record<string, unknown>): Promise<Sample[]> {
  const send = (email: string) =>
    h.app.inject({ method: "POST", url: path, payload: body(email), remoteAddress: nextIp(), headers: { "x-tenant-domain": h.tenant.domain } });
  const samples: Sample[] = [];
  let knownIndex = 0;
  for (const [i, known] of seededOrder(path).entries()) {
    const email = known ? knownEmails[knownIndex++]! : `unknown-${i}-${path.length}@example.org`;
    const answerNs = await timed(() => send(email), expected);
    // The attacker's next request, sent the moment the answer arrived.
    const nextNs = await timed(() => send(`probe-${i}-${path.length}@example.org`), expected);
    samples.push({ known, answerNs, nextNs });
    // Let the pass that this pair woke finish, so pairs don't overlap.
    await new Promise((resolve) => setTimeout(resolve, 3));
  }
  return samples;
}

function assertNoOracle(t: TestContext, samples: Sample[], what: string): void {
  const answer = thresholdAccuracy(samples.map((s) => ({ known: s.known, value: s.answerNs })));
  const next = thresholdAccuracy(samples.map((s) => ({ known: s.known, value: s.nextNs })));
  t.diagnostic(`${what}: classifier accuracy ${(answer * 100).toFixed(1)} % on the answer, ${(next * 100).toFixed(1)} % on the next request`);
  assert.ok(answer <= MAX_ACCURACY, `${what}: the answer's timing tells known from unknown (${(answer * 100).toFixed(1)} %)`);
  assert.ok(next <= MAX_ACCURACY, `${what}: the next request's timing tells known from unknown (${(next * 100).toFixed(1)} %)`);
}

const bot = { "bot-challenge-response": "x" };

/**
 * Waits until `count` webhooks of `type` reached the receiver. On a loaded machine 200 deliveries take
 * longer than a fixed wait, and an attempt that timed out is retried 10 s later on the harness's manual
 * clock: each new "will retry" line moves that clock past the retry, so the wait ends on the outcome,
 * not on a deadline. Failures are in the message.
 */
async function deliveriesArrived(h: Harness, type: string, count: number): Promise<void> {
  const retries = (): number => h.logs.filter((line) => line.includes("will retry")).length;
  // An attempt that timed out here may still have reached the receiver: count each recipient once.
  const recipients = (): number => new Set(h.receiver.ofType(type).map((w) => w.body.email)).size;
  let retried = 0;
  for (let waited = 0; recipients() < count && waited < 180_000; waited += 50) {
    if (retries() > retried) {
      retried = retries();
      // Past the first retry's 10 s (±10 %), well short of a claim's 2-minute lease.
      h.clock.advance(20_000);
      await h.deps.webhooks.deliverDue();
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const failures = h.logs.filter((line) => /webhook delivery (failed|abandoned)/.test(line));
  assert.equal(recipients(), count, `${type} deliveries; failures logged: ${failures.join("")}`);
}

test(
  "forgot-password, magic link, resend-verification, a failed login and a wrong email code: no timing oracle in the answer or the next request (D19)",
  { timeout: 600_000 },
  async (t) => {
    const h = await createHarness({ env: { RATE_LIMITS: "off" } });
    t.after(() => h.close());
    h.deps.webhooks.start();
    t.after(() => h.deps.webhooks.stop());
    const verified = await seedMembers(h, "known", PAIRS / 2, true);
    const pending = await seedMembers(h, "pending", PAIRS / 2, false);

    assertNoOracle(t, await measure(h, "/auth/forgot-password", verified, 200, (email) => ({ email, ...bot })), "forgot-password");
    assertNoOracle(t, await measure(h, "/auth/request-magic-link", verified, 200, (email) => ({ email, ...bot })), "request-magic-link");
    assertNoOracle(t, await measure(h, "/auth/resend-verification", pending, 200, (email) => ({ email, ...bot })), "resend-verification");
    assertNoOracle(t, await measure(h, "/auth/login", verified, 401, (email) => ({ email, password: "Wrong-Password-9", ...bot })), "failed login");
    // The known ones really did get their emails: the test compared real work with none.
    for (let i = 0; i < 100 && h.receiver.ofType("magic_login").length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(h.receiver.ofType("password_reset").length > 0 && h.receiver.ofType("magic_login").length > 0);
    // D26: each known email now has a live link and code; a wrong code is compared against it, and
    // against nothing for an unknown email. Neither answer nor next request may tell.
    await deliveriesArrived(h, "magic_login", verified.length);
    assertNoOracle(
      t,
      await measure(h, "/auth/verify-login-code", verified, 400, (email) => ({ email, code: "000000", ...bot })),
      "verify-login-code (a wrong code)",
    );
    const live = await h.db
      .selectFrom("one_time_tokens")
      .select("member_id")
      .where("kind", "=", "magic_login")
      .where("code_hash", "is not", null)
      .where("member_id", ">", 0)
      .execute();
    assert.equal(live.length, verified.length, "every known email had a live code to compare with, and a wrong guess left it");
    assert.equal((await login(h, verified[0]!)).statusCode, 200);
  },
);
