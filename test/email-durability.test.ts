/**
 * Issue 13, finding 2 (D19): a request that may send an email answers only after its outcome is
 * committed, so a kill -9 right after the 200 loses no email. Each endpoint is sprayed with
 * concurrent requests against a real Latch process, which is killed with SIGKILL the moment a few
 * 200s have arrived (the process is then busy with the rest: work queued after an answer is what a
 * crash loses). A second process on the same database must then send an email for every request
 * that was answered 200. Runs on SQLite and, in the PostgreSQL pass, on PostgreSQL.
 */
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import { createHarness, parseLink, registerVerifiedMember, STRONG_PASSWORD, settle, post, type Harness } from "./support/harness.js";
import { startInstanceOn, type ServerProcess } from "./support/server-process.js";

const REQUESTS = 24;
const KILL_AFTER_ANSWERS = 3;

/** Sends every request at once; SIGKILLs the process when the `killAfter`-th 200 arrives. Returns the emails answered 200. */
async function sprayThenKill(server: ServerProcess, h: Harness, path: string, bodies: Record<string, unknown>[]): Promise<string[]> {
  const answered: string[] = [];
  await Promise.all(
    bodies.map(async (body) => {
      try {
        const res = await fetch(`${server.url}${path}`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-tenant-domain": h.tenant.domain },
          body: JSON.stringify(body),
        });
        await res.arrayBuffer();
        if (res.status === 200) {
          answered.push(String(body.email));
          if (answered.length === KILL_AFTER_ANSWERS) server.child.kill("SIGKILL");
        }
      } catch {
        // The connection died with the process: that request was never answered, so nothing was promised.
      }
    }),
  );
  await new Promise<void>((resolve) =>
    server.child.exitCode !== null || server.child.signalCode !== null ? resolve() : server.child.once("exit", () => resolve()),
  );
  return answered;
}

/**
 * Polls the tenant's real webhook receiver until every email got an event of the type, and returns
 * the emails that got none and have no delivery waiting either. A delivery the killed process had
 * claimed waits for its lease (2 min) before the new process retries it: it is not lost, so it
 * counts when its row is still pending (its sealed payload opened with the test's key).
 */
async function findLostEmails(h: Harness, eventType: string, emails: string[]): Promise<string[]> {
  const received = () => emails.filter((email) => !h.receiver.ofType(eventType).some((w) => w.body.email === email));
  for (let i = 0; i < 100 && received().length > 0; i++) await new Promise((r) => setTimeout(r, 100));
  const rows = await h.db.selectFrom("webhook_deliveries").select("payload_enc").where("status", "=", "pending").where("event_type", "=", eventType).execute();
  const waiting = new Set(rows.map((r) => (JSON.parse(h.deps.secrets.open(r.payload_enc!)) as { email: string }).email));
  return received().filter((email) => !waiting.has(email));
}

async function checkDurable(t: TestContext, h: Harness, path: string, eventType: string, bodies: Record<string, unknown>[]): Promise<void> {
  const first = await startInstanceOn(h, { RATE_LIMITS: "off" });
  t.after(() => first.stop());
  const answered = await sprayThenKill(first, h, path, bodies);
  assert.ok(answered.length >= KILL_AFTER_ANSWERS, `at least ${KILL_AFTER_ANSWERS} answers before the kill`);
  const second = await startInstanceOn(h, { RATE_LIMITS: "off" });
  t.after(() => second.stop());
  const missing = await findLostEmails(h, eventType, answered);
  assert.deepEqual(missing, [], `answered 200 but no ${eventType} after the kill -9 and a restart`);
}

function emails(prefix: string): string[] {
  return Array.from({ length: REQUESTS }, (_, i) => `${prefix}-${i}@example.org`);
}

test("forgot-password: no reset email is lost to a kill -9 after the 200 (D19)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const members = emails("reset");
  for (const [i, email] of members.entries()) await registerVerifiedMember(h, email, STRONG_PASSWORD, `198.51.100.${i + 10}`);
  await checkDurable(
    t,
    h,
    "/auth/forgot-password",
    "password_reset",
    members.map((email) => ({ email, "bot-challenge-response": "x" })),
  );
});

test("request-magic-link: no login email is lost to a kill -9 after the 200 (D19)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const members = emails("magic");
  for (const [i, email] of members.entries()) await registerVerifiedMember(h, email, STRONG_PASSWORD, `198.51.100.${i + 10}`);
  await checkDurable(
    t,
    h,
    "/auth/request-magic-link",
    "magic_login",
    members.map((email) => ({ email, "bot-challenge-response": "x" })),
  );
});

test("resend-verification: no verification email is lost to a kill -9 after the 200 (D19)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const members = emails("pending");
  for (const [i, email] of members.entries()) {
    const res = await post(h, "/auth/register-magic-link", { email, name: "Pending", "bot-challenge-response": "x" }, { ip: `198.51.100.${i + 10}` });
    assert.equal(res.statusCode, 200, res.body);
  }
  await settle(h);
  const before = h.receiver.received.length;
  await checkDurable(
    t,
    h,
    "/auth/resend-verification",
    "verify_email",
    members.map((email) => ({ email, "bot-challenge-response": "x" })),
  );
  assert.ok(h.receiver.received.length > before);
  // The resent link works: it came from the request committed before the kill.
  const link = parseLink(h.receiver.received.at(-1)!.body.verificationLink!);
  assert.equal((await post(h, "/auth/verify-email", { recordId: link.recordId, token: link.token })).statusCode, 200);
});

test("registration: no verification email is lost to a kill -9 after the 200 (D19)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await checkDurable(
    t,
    h,
    "/auth/register-magic-link",
    "verify_email",
    emails("new").map((email) => ({ email, name: "New", "bot-challenge-response": "x" })),
  );
});
