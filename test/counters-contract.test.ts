/**
 * The counters contract (issue 5): rate-limit windows, distinct-IP sets and claim-once marks behave
 * the same in every twin: the SQL store on SQLite, on PostgreSQL (TEST_DATABASE_URL) and Redis
 * (TEST_REDIS_URL). Windows follow the caller's clock, counts are atomic under concurrency, and
 * nothing crosses tenants. Also: Redis unreachable means RedisUnavailableError (503), and the
 * client recovers by itself.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, test } from "node:test";
import { Redis } from "ioredis";
import type { Counters } from "../src/store/counters.js";
import { RedisCounters, RedisUnavailableError } from "../src/store/redis-counters.js";
import { TEST_DATABASE_URL } from "./support/postgres.js";
import { postgresStore, sqliteStore } from "./support/stores.js";
import { TcpProxy } from "./support/tcp-proxy.js";

const TEST_REDIS_URL = process.env.TEST_REDIS_URL;

interface MadeCounters {
  counters: Counters;
  dispose: () => Promise<void>;
}

async function redisCounters(url = TEST_REDIS_URL!, commandTimeoutMs = 1000): Promise<MadeCounters & { prefix: string }> {
  const prefix = `latch_test_${randomBytes(6).toString("hex")}:`;
  const counters = await RedisCounters.connect({ url, keyPrefix: prefix, commandTimeoutMs });
  return {
    counters,
    prefix,
    dispose: async () => {
      await counters.close();
      const admin = new Redis(TEST_REDIS_URL!);
      const keys = await admin.keys(`${prefix}*`);
      if (keys.length > 0) await admin.del(...keys);
      await admin.quit();
    },
  };
}

function countersContract(name: string, make: () => Promise<MadeCounters>): void {
  describe(`counters contract: ${name}`, () => {
    const now = 1_700_000_000_000;

    test("hit counters: atomic under concurrency, per tenant, a window starts at the first hit", async (t) => {
      const { counters, dispose } = await make();
      t.after(dispose);
      const hits = await Promise.all(Array.from({ length: 20 }, () => counters.hitCounter("ten_a", "ip:1", 1000, now)));
      assert.deepEqual(
        hits.map((h) => h.count).sort((a, b) => a - b),
        Array.from({ length: 20 }, (_, i) => i + 1),
      );
      assert.ok(
        hits.every((h) => h.windowEndsAt === now + 1000),
        "every hit reports the same window end",
      );
      assert.equal((await counters.hitCounter("ten_b", "ip:1", 1000, now)).count, 1, "other tenant");
      assert.equal((await counters.hitCounter("ten_a", "ip:2", 1000, now)).count, 1, "other key");
      assert.deepEqual(await counters.hitCounter("ten_a", "ip:1", 1000, now + 999), { count: 21, windowEndsAt: now + 1000 }, "still in the window");
      assert.deepEqual(await counters.hitCounter("ten_a", "ip:1", 1000, now + 1000), { count: 1, windowEndsAt: now + 2000 }, "a new window");
    });

    test("distinct sets: a member counts once, expires after its window, sets are per tenant", async (t) => {
      const { counters, dispose } = await make();
      t.after(dispose);
      assert.equal(await counters.addToSet("ten_a", "ips", "ip1", 1000, now), 1);
      assert.equal(await counters.addToSet("ten_a", "ips", "ip1", 1000, now + 10), 1, "seen again, still one");
      assert.equal(await counters.addToSet("ten_a", "ips", "ip2", 1000, now + 20), 2);
      assert.equal(await counters.addToSet("ten_b", "ips", "ip3", 1000, now + 20), 1, "other tenant");
      assert.equal(await counters.addToSet("ten_a", "ips", "ip3", 1000, now + 1015), 2, "ip1 expired (seen last at +10), ip2 and ip3 live");
      const many = await Promise.all(Array.from({ length: 10 }, (_, i) => counters.addToSet("ten_a", "burst", `ip${i}`, 1000, now)));
      assert.equal(Math.max(...many), 10, "concurrent adds lose nothing");
    });

    test("claim-once marks: one winner under concurrency, per tenant, free again after expiry", async (t) => {
      const { counters, dispose } = await make();
      t.after(dispose);
      const claims = await Promise.all(Array.from({ length: 10 }, () => counters.claimOnce("ten_a", "altcha_solved", "c1", now + 1000, now)));
      assert.equal(claims.filter(Boolean).length, 1, "exactly one of ten concurrent claims wins");
      assert.equal(await counters.claimOnce("ten_b", "altcha_solved", "c1", now + 1000, now), true, "other tenant");
      assert.equal(await counters.claimOnce("ten_a", "altcha_solved", "c2", now + 1000, now), true, "other member");
      assert.equal(await counters.claimOnce("ten_a", "altcha_solved", "c1", now + 1000, now + 999), false, "a replay before expiry");
      assert.equal(await counters.claimOnce("ten_a", "altcha_solved", "c1", now + 3000, now + 1000), true, "expired marks are taken over");
    });
  });
}

countersContract("sqlite", async () => {
  const { store, dispose } = await sqliteStore();
  return { counters: store.limits, dispose };
});
if (TEST_DATABASE_URL) {
  countersContract("postgres", async () => {
    const { store, dispose } = await postgresStore();
    return { counters: store.limits, dispose };
  });
}
if (TEST_REDIS_URL) {
  countersContract("redis", () => redisCounters());

  test("redis: keys live under the configured prefix and expire with their window", async (t) => {
    const made = await redisCounters();
    t.after(made.dispose);
    const now = Date.UTC(2026, 0, 1);
    await made.counters.hitCounter("ten_a", "register_ip:abc", 60_000, now);
    await made.counters.addToSet("ten_a", "login_email_ips:def", "ip1", 60_000, now);
    await made.counters.claimOnce("ten_a", "altcha_solved", "sig", now + 60_000, now);
    const admin = new Redis(TEST_REDIS_URL);
    t.after(() => admin.quit());
    const keys = (await admin.keys(`${made.prefix}*`)).sort();
    assert.deepEqual(keys, [`${made.prefix}ten_a:altcha_solved:sig`, `${made.prefix}ten_a:login_email_ips:def`, `${made.prefix}ten_a:register_ip:abc`]);
    for (const key of keys) {
      const ttl = await admin.pttl(key);
      assert.ok(ttl > 0 && ttl <= 60_000, `${key} expires with its window (pttl ${ttl})`);
    }
  });

  test("redis outage: RedisUnavailableError at once or within the command timeout, then recovery by itself", async (t) => {
    const target = new URL(TEST_REDIS_URL);
    const proxy = new TcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
    await proxy.listen();
    t.after(() => proxy.close());
    const proxied = new URL(TEST_REDIS_URL);
    proxied.port = String(proxy.port);
    const made = await redisCounters(proxied.toString(), 300);
    t.after(made.dispose);
    const now = Date.UTC(2026, 0, 1);
    assert.equal((await made.counters.hitCounter("ten_a", "k", 60_000, now)).count, 1);
    for (const mode of ["refuse", "blackhole"] as const) {
      await proxy.cut(mode);
      await assert.rejects(made.counters.hitCounter("ten_a", "k", 60_000, now), RedisUnavailableError, mode);
      await proxy.restore();
      // The client reconnects on its own (a short backoff); poll until it answers again.
      let count = 0;
      for (let i = 0; i < 100 && count === 0; i++) {
        count = await made.counters.hitCounter("ten_a", "k", 60_000, now).then(
          (h) => h.count,
          () => 0,
        );
        if (count === 0) await new Promise((r) => setTimeout(r, 50));
      }
      assert.ok(count >= 2, `${mode}: counting resumes after the outage and the earlier hits are kept (got ${count})`);
    }
  });
}
