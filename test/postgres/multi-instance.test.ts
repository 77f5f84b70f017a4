/**
 * Issue 5: two Latch processes on one PostgreSQL behave as one service. A token issued through one
 * is used once across both; a lockout earned on one holds on the other; a per-IP limit counts
 * requests to both; each webhook event is delivered once although both dispatchers run.
 * Run twice: counters in PostgreSQL, and counters in Redis (TEST_REDIS_URL).
 * PostgreSQL only, so it lives in test/postgres/, which only scripts/test-backends.mjs runs.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test, type TestContext } from "node:test";
import { Redis } from "ioredis";
import { createHarness, parseLink, STRONG_PASSWORD, type Harness } from "../support/harness.js";
import { startInstanceOn, type ServerProcess } from "../support/server-process.js";

const TEST_REDIS_URL = process.env.TEST_REDIS_URL;

type Instance = ServerProcess;

async function call(instance: Instance, h: Harness, path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${instance.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-tenant-domain": h.tenant.domain },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

/** Waits (by polling the real receiver) until `count` webhooks of a type arrived, then a little longer for duplicates. */
async function webhooksOf(h: Harness, type: string, count: number): Promise<number> {
  for (let i = 0; i < 100 && h.receiver.ofType(type).length < count; i++) await new Promise((r) => setTimeout(r, 50));
  await new Promise((r) => setTimeout(r, 1500)); // both dispatchers poll every second: give a duplicate its chance
  return h.receiver.ofType(type).length;
}

async function twoInstances(t: TestContext, extraEnv: Record<string, string>): Promise<Harness> {
  assert.equal(process.env.LATCH_TEST_STORE, "postgres", "run by scripts/test-backends.mjs");
  const h = await createHarness();
  t.after(() => h.close());
  const [a, b] = await Promise.all([startInstanceOn(h, extraEnv), startInstanceOn(h, extraEnv)]);
  t.after(async () => {
    await a.stop();
    await b.stop();
  });

  // Registration through A: the event is delivered once although both dispatchers run.
  const registered = await call(a, h, "/auth/register-password", {
    email: "multi@example.org",
    name: "M",
    password: STRONG_PASSWORD,
    "bot-challenge-response": "x",
  });
  assert.equal(registered.status, 200);
  assert.equal(await webhooksOf(h, "verify_email", 1), 1, "one delivery for one event");

  // The token is used once across both instances.
  const link = parseLink(h.receiver.last("verify_email").body.verificationLink!);
  const attempts = await Promise.all(
    Array.from({ length: 10 }, (_, i) => call(i % 2 ? a : b, h, "/auth/verify-email", { recordId: link.recordId, token: link.token })),
  );
  assert.equal(attempts.filter((r) => r.status === 200).length, 1);

  // A lockout earned on A holds on B.
  for (let i = 0; i < 3; i++)
    assert.equal((await call(a, h, "/auth/login", { email: "multi@example.org", password: "Wrong-Password-1", "bot-challenge-response": "x" })).status, 401);
  const onB = await call(b, h, "/auth/login", { email: "multi@example.org", password: STRONG_PASSWORD, "bot-challenge-response": "x" });
  assert.equal(onB.status, 429);

  // The per-IP registration limit (5/h) counts requests to both (all come from 127.0.0.1).
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++)
    statuses.push(
      (
        await call(i % 2 ? a : b, h, "/auth/register-password", {
          email: `n${i}@example.org`,
          name: "N",
          password: STRONG_PASSWORD,
          "bot-challenge-response": "x",
        })
      ).status,
    );
  assert.deepEqual(statuses, [200, 200, 200, 200, 429], "the first registration through A counted too");
  return h;
}

test("two instances on one PostgreSQL: one use per token, shared limits and lockouts, one delivery per event", async (t) => {
  const h = await twoInstances(t, { REDIS_URL: "" });
  const counters = await h.db.selectFrom("rate_limit_counters").select("key").execute();
  assert.ok(
    counters.some((c) => c.key.startsWith("register_ip:")),
    "without Redis the counters are rows in PostgreSQL",
  );
});

test(
  "two instances on one PostgreSQL and one Redis: the same guarantees, counters in Redis",
  { skip: TEST_REDIS_URL ? false : "TEST_REDIS_URL is not set" },
  async (t) => {
    const prefix = `latch_test_${randomBytes(6).toString("hex")}:`;
    const h = await twoInstances(t, { REDIS_URL: TEST_REDIS_URL!, REDIS_KEY_PREFIX: prefix });
    assert.equal((await h.db.selectFrom("rate_limit_counters").select("key").execute()).length, 0, "no counter rows in PostgreSQL");
    const redis = new Redis(TEST_REDIS_URL!);
    t.after(() => redis.quit());
    const tenant = await h.db.selectFrom("tenants").select("id").where("domain", "=", h.tenant.domain).executeTakeFirstOrThrow();
    const keys = await redis.keys(`${prefix}${tenant.id}:register_ip:*`);
    assert.equal(keys.length, 1, "one register_ip counter, shared by both instances");
    assert.equal(await redis.hget(keys[0]!, "c"), "6", "six registrations from 127.0.0.1 counted (one refused)");
  },
);
