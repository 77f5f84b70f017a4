/** Spec 8.2 rows that count distinct IPs per email: login velocity and the registration warning. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MINUTE, SECOND } from "../src/core/clock.js";
import { adminHeaders, WRONG_PASSWORD } from "./support/flows.js";
import { createHarness, get, login, post, registerVerifiedMember, STRONG_PASSWORD } from "./support/harness.js";

const ip = (n: number) => `198.51.100.${n}`;

test("login velocity: 5 IPs in 15 min are logged as suspicious, the 10th IP locks password login for 30 min", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, "target@example.org");
  for (let n = 1; n <= 4; n++) assert.equal((await login(h, "target@example.org", STRONG_PASSWORD, { ip: ip(n) })).statusCode, 200);
  assert.ok(!h.logs.some((l) => l.includes("suspicious_login_velocity")), "4 IPs are not suspicious");
  assert.equal((await login(h, "target@example.org", STRONG_PASSWORD, { ip: ip(5) })).statusCode, 200, "5 IPs are logged, not refused");
  assert.ok(h.logs.some((l) => l.includes("suspicious_login_velocity")));
  const audit = await get(h, `/auth/admin/audit-log?recordId=${recordId}`, { headers: adminHeaders(h) });
  assert.ok((audit.json().events as { type: string }[]).some((e) => e.type === "suspicious_login_velocity"));

  for (let n = 6; n <= 9; n++) assert.equal((await login(h, "target@example.org", STRONG_PASSWORD, { ip: ip(n) })).statusCode, 200);
  const locked = await login(h, "target@example.org", STRONG_PASSWORD, { ip: ip(10) });
  assert.equal(locked.statusCode, 429);
  assert.equal(locked.json().authorized, false);
  assert.equal(locked.headers["retry-after"], String(30 * 60));
  assert.equal((await login(h, "target@example.org", STRONG_PASSWORD, { ip: ip(1) })).statusCode, 429, "every IP is refused during the lockout");

  h.clock.advance(30 * MINUTE - SECOND);
  assert.equal((await login(h, "target@example.org", STRONG_PASSWORD, { ip: ip(1) })).statusCode, 429);
  h.clock.advance(SECOND);
  assert.equal((await login(h, "target@example.org", STRONG_PASSWORD, { ip: ip(1) })).statusCode, 200, "over after 30 minutes");
});

test("login velocity: IPs older than 15 minutes no longer count", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "slow@example.org");
  for (let n = 1; n <= 9; n++) {
    assert.equal((await login(h, "slow@example.org", STRONG_PASSWORD, { ip: ip(n) })).statusCode, 200);
    h.clock.advance(2 * MINUTE);
  }
  assert.equal((await login(h, "slow@example.org", STRONG_PASSWORD, { ip: ip(10) })).statusCode, 200, "only 8 IPs fall within the last 15 minutes");
});

test("login velocity counts unknown emails too, so the lockout reveals nothing", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const statuses: number[] = [];
  for (let n = 1; n <= 10; n++) statuses.push((await login(h, "ghost@example.org", STRONG_PASSWORD, { ip: ip(n) })).statusCode);
  assert.deepEqual(statuses, [401, 401, 401, 429, 429, 429, 429, 429, 429, 429], "the failed-login lockout, as for a known email");
});

test("login velocity: the suspicious_login_velocity audit row is written for an unknown email as for a known one (no timing tell)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "known@example.org");
  const suspiciousRows = async () =>
    Number(
      (
        await h.db
          .selectFrom("audit_events")
          .select((eb) => eb.fn.countAll<number>().as("n"))
          .where("type", "=", "suspicious_login_velocity")
          .executeTakeFirstOrThrow()
      ).n,
    );
  for (const email of ["known@example.org", "ghost@example.org"]) {
    const before = await suspiciousRows();
    // Three failures lock for an hour; refused attempts near its end still count their IPs.
    for (let n = 1; n <= 3; n++) assert.equal((await login(h, email, WRONG_PASSWORD, { ip: ip(n) })).statusCode, 401);
    h.clock.advance(50 * MINUTE);
    for (let n = 4; n <= 7; n++) assert.equal((await login(h, email, WRONG_PASSWORD, { ip: ip(n) })).statusCode, 429);
    h.clock.advance(10 * MINUTE + SECOND);
    assert.equal((await login(h, email, WRONG_PASSWORD, { ip: ip(8) })).statusCode, 401, "the fifth IP of the last 15 minutes is checked");
    assert.equal(await suspiciousRows(), before + 1, `one suspicious_login_velocity row for ${email}`);
  }
});

test("registration: 5 or more IPs for one email within an hour are logged, counted even when another limit refuses", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const register = (n: number) =>
    post(h, "/auth/register-password", { email: "popular@example.org", name: "P", password: STRONG_PASSWORD, "bot-challenge-response": "x" }, { ip: ip(n) });
  const warned = () => h.logs.some((l) => l.includes("many IPs registering one email"));
  for (let n = 1; n <= 3; n++) assert.equal((await register(n)).statusCode, 200);
  assert.equal((await register(4)).statusCode, 429, "the 3-per-email limit refuses the 4th attempt");
  assert.equal(warned(), false, "4 IPs are not yet worth a warning");
  assert.equal((await register(5)).statusCode, 429);
  assert.equal(warned(), true, "the 5th IP is logged");
  assert.ok(!h.logs.some((l) => l.includes("popular@example.org")), "the warning names no email");
});

test("RATE_LIMITS=off (benchmarks) lifts the request limits but not the login lockout", async (t) => {
  const h = await createHarness({ env: { RATE_LIMITS: "off" } });
  t.after(() => h.close());
  const register = (n: number) =>
    post(h, "/auth/register-password", { email: `bench${n}@example.org`, name: "B", password: STRONG_PASSWORD, "bot-challenge-response": "x" }, { ip: ip(1) });
  for (let n = 0; n < 8; n++) assert.equal((await register(n)).statusCode, 200, `registration ${n + 1} from one IP passes (the limit is 5/h)`);
  for (let n = 0; n < 12; n++)
    assert.equal((await post(h, "/auth/forgot-password", { email: `bench${n}@example.org`, "bot-challenge-response": "x" }, { ip: ip(1) })).statusCode, 200);
  await registerVerifiedMember(h, "locked@example.org", STRONG_PASSWORD, ip(2));
  for (let n = 0; n < 3; n++) assert.equal((await login(h, "locked@example.org", "Wrong-Password-1", { ip: ip(2) })).statusCode, 401);
  assert.equal((await login(h, "locked@example.org", STRONG_PASSWORD, { ip: ip(2) })).statusCode, 429, "the lockout still holds");
  assert.equal(h.config.rateLimits, false);
});
