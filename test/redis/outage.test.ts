/**
 * Issue 5: with Redis unreachable, requests that count against a limit get 503 unavailable within
 * the command timeout, the process stays up, nothing is written, and service resumes by itself.
 * Also: with REDIS_URL set the counters and ALTCHA marks live in Redis, not in the SQL store.
 * Run by scripts/test-backends.mjs in the Redis pass (TEST_REDIS_URL).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { Redis } from "ioredis";
import { register } from "../support/flows.js";
import { createHarness, get, STRONG_PASSWORD } from "../support/harness.js";
import { TcpProxy } from "../support/tcp-proxy.js";

const TEST_REDIS_URL = process.env.TEST_REDIS_URL;
assert.ok(TEST_REDIS_URL, "run by scripts/test-backends.mjs with TEST_REDIS_URL");

test("with REDIS_URL the limit counters live in Redis under the key prefix, none in the SQL store", async (t) => {
  const prefix = `latch_test_${randomBytes(6).toString("hex")}:`;
  const h = await createHarness({ env: { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix } });
  t.after(() => h.close());
  const redis = new Redis(TEST_REDIS_URL);
  t.after(() => redis.quit());
  for (let i = 0; i < 6; i++) await register(h, `r${i}@example.org`, STRONG_PASSWORD, { ip: "198.51.100.7" });
  assert.equal((await register(h, "r6@example.org", STRONG_PASSWORD, { ip: "198.51.100.7" })).statusCode, 429, "the per-IP limit holds with Redis");
  const keys = await redis.keys(`${prefix}*`);
  assert.ok(
    keys.some((k) => k.includes(":register_ip:")),
    `register_ip counter in Redis: ${keys.join(", ")}`,
  );
  assert.equal((await h.db.selectFrom("rate_limit_counters").select("key").execute()).length, 0);
  assert.equal((await h.db.selectFrom("rate_limit_sets").select("key").execute()).length, 0);
});

test("Redis outage: 503 unavailable, nothing written, readiness reports it, recovery without a restart", async (t) => {
  const target = new URL(TEST_REDIS_URL);
  const proxy = new TcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
  await proxy.listen();
  t.after(() => proxy.close());
  const proxied = new URL(TEST_REDIS_URL);
  proxied.port = String(proxy.port);
  const h = await createHarness({ env: { REDIS_URL: proxied.toString(), REDIS_COMMAND_TIMEOUT_MS: "300" } });
  t.after(() => h.close());

  assert.equal((await register(h, "before@example.org", STRONG_PASSWORD, { ip: "198.51.100.1" })).statusCode, 200);
  for (const mode of ["refuse", "blackhole"] as const) {
    await proxy.cut(mode);
    const during = await register(h, `during-${mode}@example.org`, STRONG_PASSWORD, { ip: "198.51.100.2" });
    assert.equal(during.statusCode, 503, `${mode}: ${during.body}`);
    assert.equal(during.json().code, "unavailable");
    assert.equal((await get(h, "/readyz")).statusCode, 503, `${mode}: readiness reports the outage`);
    assert.equal((await get(h, "/healthz")).statusCode, 200, `${mode}: the process is alive`);
    await proxy.restore();
    let ready = 503;
    for (let i = 0; i < 100 && ready !== 200; i++) {
      ready = (await get(h, "/readyz")).statusCode;
      if (ready !== 200) await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(ready, 200, `${mode}: ready again by itself`);
  }

  assert.equal((await register(h, "after@example.org", STRONG_PASSWORD, { ip: "198.51.100.3" })).statusCode, 200);
  const emails = (await h.db.selectFrom("members").select("email").orderBy("email").execute()).map((r) => r.email);
  assert.deepEqual(emails, ["after@example.org", "before@example.org"], "the refused registrations wrote nothing");
  assert.ok(
    h.logs.some((l) => l.includes("Redis")),
    "the outage is logged",
  );
  assert.ok(!h.logs.some((l) => l.includes(STRONG_PASSWORD)), "no password in the logs");
});
