/** Pure pieces, tested directly: policy, normalisation, lockout steps, rate decision, crypto helpers, config. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { setMostRecent } from "../src/core/lru.js";
import { SingleFlight } from "../src/core/single-flight.js";
import { readFileSync } from "node:fs";
import * as nodeArgon2 from "argon2";
import { loadConfig, ConfigError } from "../src/config.js";
import { HOUR, ManualClock, systemClock } from "../src/core/clock.js";
import { randomIntBetween, seededRandom, cryptoRandom } from "../src/core/random.js";
import { normalizeEmail, normalizeName, parseRecordId } from "../src/security/identity.js";
import { finishFailedCheck, lockoutRemainingMs, nextTurnCheckInMs, noLockout, recordFailedLogin, startPasswordCheck } from "../src/security/lockout.js";
import { createPasswordHasher, DEFAULT_ARGON2, failedPasswordRules, normalizePassword, phcNeedsRehash, SALT_BYTES } from "../src/security/password.js";
import { decideRateLimit } from "../src/security/rate-limit.js";
import { CHECK_ABANDONED_AFTER_MS, rateRules } from "../src/rules.js";
import { createSecretBox } from "../src/security/secret-box.js";
import { constantTimeEqual } from "../src/security/hashing.js";
import { Writable } from "node:stream";
import { createLogger, redactUrl } from "../src/logging.js";
import { createHarness, login, registerVerifiedMember, STRONG_PASSWORD } from "./support/harness.js";

test("password policy names each failed rule (spec 5.3, D12)", () => {
  assert.deepEqual(failedPasswordRules("Abcdef1"), ["min_length"]);
  assert.deepEqual(failedPasswordRules("abcdefg1"), ["uppercase"]);
  assert.deepEqual(failedPasswordRules("ABCDEFG1"), ["lowercase"]);
  assert.deepEqual(failedPasswordRules("Abcdefgh"), ["number_or_special"]);
  assert.deepEqual(failedPasswordRules("Abcdefg!"), []);
  assert.deepEqual(failedPasswordRules("Abcdefg1"), []);
  assert.ok(failedPasswordRules("Aa1" + "x".repeat(254)).includes("max_length"));
  // NFKC: full-width letters become ASCII, so policy and hash see one form.
  assert.equal(normalizePassword("Ｐａｓｓ１"), "Pass1");
});

test("email and name normalisation (D8)", () => {
  assert.equal(normalizeEmail("  Ada@Example.ORG "), "ada@example.org");
  for (const bad of ["", "ada", "ada@example", "a@b@example.org", "ada @example.org", `${"a".repeat(250)}@example.org`]) {
    assert.throws(() => normalizeEmail(bad), { code: "validation_failed" }, bad);
  }
  assert.equal(normalizeName("  Ada  "), "Ada");
  for (const bad of ["", "   ", "x".repeat(101), "Ada\u0000", "Ada\nLovelace"]) {
    assert.throws(() => normalizeName(bad), { code: "validation_failed" }, JSON.stringify(bad));
  }
  assert.equal(parseRecordId("123456789012345"), 123456789012345);
  assert.equal(parseRecordId("12a"), undefined);
  assert.equal(parseRecordId("99999999999999999"), undefined);
});

test("lockout steps: 1 h, 4 h, 24 h, 7 d, then 7 d again (D13)", () => {
  let state = undefined;
  let now = 0;
  const durations: number[] = [];
  for (let round = 0; round < 5; round++) {
    for (let i = 0; i < 3; i++) state = recordFailedLogin(state, now);
    durations.push(lockoutRemainingMs(state, now) / HOUR);
    assert.ok(state, "three failures lock");
    now = state.lockedUntil;
    assert.equal(lockoutRemainingMs(state, now), 0, "the lockout ends exactly at lockedUntil");
  }
  assert.deepEqual(durations, [1, 4, 24, 168, 168]);
});

test("lockout budget (D20): failures plus checks in flight never pass 3; a fourth check waits, a check's failure counts when it finishes", () => {
  const now = 1_000_000;
  let state = noLockout;
  for (let i = 0; i < 3; i++) {
    const gate = startPasswordCheck(state, now);
    assert.equal(gate.kind, "start");
    if (gate.kind === "start") state = gate.state;
  }
  assert.equal(state.inFlight, 3);
  assert.equal(state.failures, 0, "a check in flight is not a failure");
  assert.equal(startPasswordCheck(state, now).kind, "wait", "the fourth waits for a place");
  state = finishFailedCheck(state, now);
  assert.deepEqual([state.failures, state.inFlight], [1, 2]);
  assert.equal(startPasswordCheck(state, now).kind, "wait", "one failure and two in flight fill the budget");
  state = finishFailedCheck(finishFailedCheck(state, now), now);
  assert.equal(lockoutRemainingMs(state, now), HOUR, "three failures lock for an hour");
  assert.equal(startPasswordCheck(state, now).kind, "refused");
});

test("lockout budget (D20): places of a dead process are free again once their time is up, never failures; checks finishing during a lockout don't count", () => {
  const now = 1_000_000;
  const orphaned = { ...noLockout, failures: 1, inFlight: 2, inFlightUntil: now + CHECK_ABANDONED_AFTER_MS };
  assert.equal(startPasswordCheck(orphaned, now).kind, "wait", "still within their time");
  const later = now + CHECK_ABANDONED_AFTER_MS;
  const gate = startPasswordCheck(orphaned, later);
  assert.equal(gate.kind, "start", "lost checks told nobody anything: their places are free, no lockout");
  assert.deepEqual(gate.kind === "start" && [gate.state.failures, gate.state.inFlight, gate.state.lockedUntil], [1, 1, 0]);
  const locked = { ...noLockout, level: 1, lockedUntil: now + HOUR, inFlight: 2, inFlightUntil: now + 1 };
  assert.deepEqual(finishFailedCheck(locked, now), { ...locked, inFlight: 1 }, "no failure counted on top of a running lockout");
});

test("turn of a waiting check (D30): it sleeps until the next re-check or its deadline, whichever is first, and gives up at the deadline", () => {
  assert.equal(nextTurnCheckInMs(1_000, 6_000, 250), 250, "re-checks well before the deadline");
  assert.equal(nextTurnCheckInMs(5_900, 6_000, 250), 100, "never sleeps past the deadline");
  assert.equal(nextTurnCheckInMs(5_999, 6_000, 250), 1);
  assert.equal(nextTurnCheckInMs(6_000, 6_000, 250), undefined, "at the deadline it gives up");
  assert.equal(nextTurnCheckInMs(9_000, 6_000, 250), undefined);
});

/** Settles `promise` into a flag, so a test can see whether it resolved yet. */
function settled(promise: Promise<unknown>): { done: boolean } {
  const flag = { done: false };
  void promise.then(() => (flag.done = true));
  return flag;
}

test("manual clock (D30): a sleep ends when advance or set reaches its time, or at once when aborted, and leaves no timer behind", async () => {
  const clock = new ManualClock(0);
  const short = settled(clock.sleep(100));
  const long = settled(clock.sleep(1_000));
  clock.advance(99);
  await Promise.resolve();
  assert.deepEqual([short.done, long.done], [false, false], "nothing ends before its time");
  clock.advance(1);
  await Promise.resolve();
  assert.deepEqual([short.done, long.done], [true, false]);
  clock.set(1_000);
  await Promise.resolve();
  assert.equal(long.done, true, "set moves time as advance does");
  const wakes = new AbortController();
  const woken = settled(clock.sleep(5_000, wakes.signal));
  assert.equal(clock.pendingSleeps, 1);
  wakes.abort();
  await Promise.resolve();
  assert.equal(woken.done, true, "an abort ends the sleep without the clock moving");
  assert.equal(clock.pendingSleeps, 0, "and forgets its timer");
  await clock.sleep(0);
  await clock.sleep(10, wakes.signal);
  assert.equal(clock.pendingSleeps, 0, "zero or already aborted: no timer at all");
});

test("system clock (D30): a sleep ends on an abort without waiting for its time, and never rejects", async () => {
  const wakes = new AbortController();
  const started = performance.now();
  const sleeping = systemClock.sleep(60_000, wakes.signal);
  wakes.abort();
  await sleeping;
  assert.ok(performance.now() - started < 1_000);
  // Its timer is unref'd (a waiting request must not hold a stopping process): something else keeps this one alive.
  const alive = setInterval(() => undefined, 1_000);
  await systemClock.sleep(5).finally(() => clearInterval(alive));
});

test("rate decision: allowed up to the limit, Retry-After until the window ends", () => {
  const rule = rateRules.registerPerIp;
  assert.deepEqual(decideRateLimit({ count: 5, windowEndsAt: 10_000 }, rule, 0), { allowed: true, retryAfterSeconds: 10 });
  assert.deepEqual(decideRateLimit({ count: 6, windowEndsAt: 10_500 }, rule, 0), { allowed: false, retryAfterSeconds: 11 });
  assert.equal(decideRateLimit({ count: 6, windowEndsAt: 10 }, rule, 10).retryAfterSeconds, 1, "never 0");
});

test("record ids are uniform in [10^14, 2^53) and seeded random replays", () => {
  const a = seededRandom("x");
  const b = seededRandom("x");
  for (let i = 0; i < 200; i++) {
    const id = randomIntBetween(a, 10 ** 14, 2 ** 53);
    assert.equal(id, randomIntBetween(b, 10 ** 14, 2 ** 53));
    assert.ok(id >= 10 ** 14 && id < 2 ** 53 && Number.isSafeInteger(id));
  }
});

test("secret box: round trip, fresh IV each time, tampering detected", () => {
  const box = createSecretBox(Buffer.alloc(32, 3), cryptoRandom);
  const sealed = box.seal("https://x.example/reset-password/1/token");
  assert.equal(box.open(sealed), "https://x.example/reset-password/1/token");
  assert.notEqual(box.seal("same"), box.seal("same"));
  assert.doesNotMatch(sealed, /token/);
  const parts = sealed.split(".");
  parts[2] = Buffer.from("tampered").toString("base64url");
  assert.throws(() => box.open(parts.join(".")));
  assert.throws(() => createSecretBox(Buffer.alloc(16), cryptoRandom).open(sealed));
});

test("constant-time compare", () => {
  assert.equal(constantTimeEqual("abc", "abc"), true);
  assert.equal(constantTimeEqual("abc", "abd"), false);
  assert.equal(constantTimeEqual("abc", "abcd"), false);
});

test("config: defaults, and one clear message per bad variable (D17)", () => {
  const config = loadConfig({});
  assert.equal(config.port, 8080);
  assert.equal(config.databaseUrl, "sqlite:./data/latch.db");
  assert.equal(config.breachCheckMode, "remote");
  assert.equal(config.webhookAllowPrivateNetworks, false);
  assert.equal(config.trustProxy, false);
  assert.ok(Object.isFrozen(config));
  assert.deepEqual(loadConfig({ TRUST_PROXY: "10.0.0.1, 10.0.1.0/24" }).trustProxy, ["10.0.0.1", "10.0.1.0/24"]);
  assert.deepEqual([config.databasePoolSize, config.databaseStatementTimeoutMs], [10, 5000]);
  const tuned = loadConfig({ DATABASE_POOL_SIZE: "25", DATABASE_STATEMENT_TIMEOUT_MS: "2000" });
  assert.deepEqual([tuned.databasePoolSize, tuned.databaseStatementTimeoutMs], [25, 2000]);
  assert.throws(() => loadConfig({ DATABASE_POOL_SIZE: "0" }), /DATABASE_POOL_SIZE/);
  assert.throws(() => loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: "soon" }), /DATABASE_STATEMENT_TIMEOUT_MS/);
  assert.equal(config.auditRetentionDays, 365);
  assert.equal(loadConfig({ AUDIT_RETENTION_DAYS: "90" }).auditRetentionDays, 90);
  assert.throws(() => loadConfig({ AUDIT_RETENTION_DAYS: "0" }), /AUDIT_RETENTION_DAYS/);
  // Issue 5: Redis, migrations at start, and one shared key for PostgreSQL.
  assert.deepEqual([config.redisUrl, config.redisKeyPrefix, config.redisCommandTimeoutMs, config.migrateOnStart], [undefined, "latch:", 1000, true]);
  assert.equal(loadConfig({ REDIS_URL: "redis://cache:6379/2", MIGRATE_ON_START: "false" }).migrateOnStart, false);
  assert.throws(() => loadConfig({ REDIS_URL: "cache:6379" }), /REDIS_URL must start with redis:\/\//);
  assert.throws(() => loadConfig({ MIGRATE_ON_START: "sometimes" }), /MIGRATE_ON_START/);
  assert.equal(config.rateLimits, true);
  assert.equal(loadConfig({ RATE_LIMITS: "off" }).rateLimits, false);
  assert.throws(() => loadConfig({ RATE_LIMITS: "no" }), /RATE_LIMITS/);
  assert.throws(() => loadConfig({ DATABASE_URL: "postgres://db/latch" }), /SECRETS_KEY is required when DATABASE_URL is PostgreSQL/);
  assert.equal(loadConfig({ DATABASE_URL: "postgres://db/latch", SECRETS_KEY: "22".repeat(32) }).databaseUrl, "postgres://db/latch");
  try {
    loadConfig({ PORT: "http", BREACH_CHECK_MODE: "sometimes", SECRETS_KEY: "short", LOG_LEVEL: "loud", DATABASE_URL: "mysql://x", OPERATOR_API_KEY: "weak" });
    assert.fail("expected a ConfigError");
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    assert.equal(err.problems.length, 6);
    assert.doesNotMatch(err.message, /weak/, "a secret value is never echoed");
  }
});

/** PHC strings made by the `argon2` package (node-argon2 0.45), which Latch hashed with before @node-rs/argon2 (dependencies.md#the-argon2id-binding). */
const OLD_LIBRARY_HASHES = (
  JSON.parse(readFileSync(new URL("./fixtures/argon2-node-argon2.json", import.meta.url), "utf8")) as {
    hashes: { note: string; password: string; phc: string }[];
  }
).hashes;
const oldHash = (note: RegExp) => OLD_LIBRARY_HASHES.find((h) => note.test(h.note))!;

test("hashes stored by the argon2 package verify with Latch's hasher, and a wrong password does not", async () => {
  const hasher = createPasswordHasher();
  assert.equal(OLD_LIBRARY_HASHES.length, 5);
  for (const { note, password, phc } of OLD_LIBRARY_HASHES) {
    assert.equal(await hasher.verifyPassword(phc, password), true, note);
    assert.equal(await hasher.verifyPassword(phc, `${password}x`), false, note);
  }
});

test("hashes Latch makes now verify with the argon2 package, at Latch's parameters and 32-byte salt (D12)", async () => {
  const hasher = createPasswordHasher();
  const password = normalizePassword("Äpfel-und-Birnen-42-ﬁx");
  const phc = await hasher.hashPassword(password, Buffer.alloc(SALT_BYTES, 9));
  assert.match(phc, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$CQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQk\$[A-Za-z0-9+/]{43}$/);
  assert.equal(await nodeArgon2.verify(phc, password), true);
  assert.equal(await nodeArgon2.verify(phc, "Äpfel-und-Birnen-42-fiy"), false);
  // The same salt and parameters give the same digest in both libraries: only the order of m, t, p in the string differs.
  const old = await nodeArgon2.hash(password, { type: nodeArgon2.argon2id, ...DEFAULT_ARGON2, salt: Buffer.alloc(SALT_BYTES, 9) });
  assert.equal(old.split("$").pop(), phc.split("$").pop());
  assert.equal(nodeArgon2.needsRehash(phc, DEFAULT_ARGON2), false);
});

test("needsRehash reads the PHC parameters: algorithm, version, m, t and p, in either order", () => {
  const hasher = createPasswordHasher();
  assert.equal(hasher.needsRehash(oldHash(/32-byte salt/).phc), false, "node-argon2's m,p,t order at Latch's cost");
  assert.equal(hasher.needsRehash(oldHash(/16-byte salt/).phc), false, "the salt's length is not a parameter");
  assert.equal(hasher.needsRehash(oldHash(/outdated cost/).phc), true);
  assert.equal(hasher.needsRehash(oldHash(/Argon2i/).phc), true, "Argon2i at Latch's cost is still replaced by Argon2id");
  const latch = oldHash(/32-byte salt/).phc.replace("m=19456,p=1,t=2", "m=19456,t=2,p=1");
  assert.equal(hasher.needsRehash(latch), false);
  assert.equal(hasher.needsRehash(latch.replace("v=19", "v=16")), true, "version 0x10");
  assert.equal(hasher.needsRehash(latch.replace("t=2", "t=3")), true);
  assert.equal(hasher.needsRehash(latch.replace("p=1", "p=2")), true);
  assert.equal(hasher.needsRehash(latch.replace("m=19456", "m=65536")), true);
  assert.equal(phcNeedsRehash(latch, { ...DEFAULT_ARGON2, memoryCost: 65536 }), true, "a raised policy replaces today's hashes");
  assert.equal(hasher.needsRehash("$argon2id$v=19$m=19456,t=2,p=1$not-base64!$x"), true, "unparseable: replaced, never thrown");
  assert.equal(hasher.needsRehash(""), true);
});

test("a hash with outdated Argon2 parameters is replaced on the next successful login (D12)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = Number(await registerVerifiedMember(h, "old@example.org"));
  const weak = oldHash(/outdated cost/);
  assert.equal(weak.password, STRONG_PASSWORD);
  const tenantId = (await h.deps.store.tenants.findTenantByDomain(h.tenant.domain))!.id;
  const current = (await h.deps.store.members.findMemberById(tenantId, recordId))!.passwordHash!;
  assert.equal(await h.deps.store.members.replacePasswordHash(tenantId, recordId, current, weak.phc, "", h.clock.now()), true);
  assert.match((await h.deps.store.members.findMemberById(tenantId, recordId))!.passwordHash!, /m=4096/);
  assert.equal((await login(h, "old@example.org")).statusCode, 200);
  const rehashed = (await h.deps.store.members.findMemberById(tenantId, recordId))!.passwordHash!;
  assert.match(rehashed, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
  assert.equal((await login(h, "old@example.org")).statusCode, 200, "the new hash verifies");
});

test("log redaction: secret fields at the top level and one level down; tokens in link URLs", () => {
  const lines: string[] = [];
  const log = createLogger(
    "info",
    new Writable({
      write(chunk: Buffer, _e, done) {
        lines.push(chunk.toString());
        done();
      },
    }),
  );
  log.info(
    { password: "SECRET-1", "bot-challenge-response": "SECRET-2", body: { newPassword: "SECRET-3", token: "SECRET-4" }, webhookSecret: "SECRET-5" },
    "x",
  );
  const text = lines.join("");
  assert.doesNotMatch(text, /SECRET-/);
  assert.match(text, /\[redacted\]/);
  assert.equal(redactUrl("/auth/verify-magic-link/123/abcDEF_-?x=1"), "/auth/verify-magic-link/123/[redacted]?x=1");
  // The pages the emailed links open (spec 4.6), at their own paths and under the hosted-pages prefix.
  for (const page of ["email-verified", "reset-password", "verify-magic-link"]) {
    assert.equal(redactUrl(`/${page}/123/abcDEF_-`), `/${page}/123/[redacted]`);
    assert.equal(redactUrl(`/ui/${page}/123/abcDEF_-#x`), `/ui/${page}/123/[redacted]#x`);
  }
  assert.equal(redactUrl("/ui/login?next=/x"), "/ui/login?next=/x");
});

test("setMostRecent keeps the most recently used entries, at most max, the one used last at the end", () => {
  const entries = new Map<string, number>();
  for (const [key, value] of [
    ["a", 1],
    ["b", 2],
    ["c", 3],
  ] as const)
    setMostRecent(entries, key, value, 3);
  setMostRecent(entries, "a", 10, 3);
  setMostRecent(entries, "d", 4, 3);
  assert.deepEqual(
    [...entries],
    [
      ["c", 3],
      ["a", 10],
      ["d", 4],
    ],
  );
  setMostRecent(entries, "e", 5, 1);
  assert.deepEqual([...entries], [["e", 5]]);
});

test("single flight: callers while the work runs share it, its failure too; the key is free once it settles", async () => {
  const flight = new SingleFlight<number>();
  let started = 0;
  let finish: (value: number) => void = () => undefined;
  const work = () => {
    started++;
    return new Promise<number>((resolve) => (finish = resolve));
  };
  const first = flight.run("a", work);
  const second = flight.run("a", work);
  const other = flight.run("b", () => Promise.resolve(7));
  assert.equal(started, 1, "one run for key a");
  finish(42);
  assert.deepEqual(await Promise.all([first, second, other]), [42, 42, 7]);
  const failing = () => {
    started++;
    return Promise.reject(new Error("no"));
  };
  const failures = await Promise.allSettled([flight.run("a", failing), flight.run("a", failing)]);
  assert.deepEqual(
    failures.map((f) => f.status),
    ["rejected", "rejected"],
  );
  assert.equal(started, 2, "the failure was shared, not run twice");
  assert.equal(await flight.run("a", () => Promise.resolve(1)), 1, "free again after a failure");
});
