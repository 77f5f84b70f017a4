/**
 * Issue 5: with PostgreSQL unreachable, requests get 503 unavailable within the statement timeout,
 * the process stays up, nothing is half-written, and service resumes by itself. The test cuts a
 * TCP proxy it runs between Latch and the server: refused connections, then a black hole.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createHarness, get, post, STRONG_PASSWORD } from "../support/harness.js";
import { createTestSchema } from "../support/postgres.js";
import { TcpProxy } from "../support/tcp-proxy.js";

test("PostgreSQL outage: 503 unavailable, nothing half-written, recovery without a restart", async (t) => {
  const schema = await createTestSchema();
  const direct = new URL(schema.url);
  const proxy = new TcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
  await proxy.listen();
  t.after(() => proxy.close());
  const proxied = new URL(schema.url);
  proxied.port = String(proxy.port);
  const h = await createHarness({ env: { DATABASE_URL: proxied.toString(), DATABASE_STATEMENT_TIMEOUT_MS: "1000" } });
  t.after(() => h.close());
  const register = (email: string, ip: string) =>
    post(h, "/auth/register-password", { email, name: "O", password: STRONG_PASSWORD, "bot-challenge-response": "x" }, { ip });

  assert.equal((await register("before@example.org", "198.51.100.1")).statusCode, 200);

  for (const mode of ["refuse", "blackhole"] as const) {
    await proxy.cut(mode);
    const during = await register(`during-${mode}@example.org`, "198.51.100.2");
    assert.equal(during.statusCode, 503, `${mode}: ${during.body}`);
    assert.equal(during.json().code, "unavailable");
    assert.equal((await get(h, "/readyz")).statusCode, 503, `${mode}: readiness reports the outage`);
    assert.equal((await get(h, "/healthz")).statusCode, 200, `${mode}: the process is alive`);
    await proxy.restore();
  }

  // Service resumes by itself, and the refused registrations wrote nothing.
  assert.equal((await get(h, "/readyz")).statusCode, 200);
  assert.equal((await register("after@example.org", "198.51.100.3")).statusCode, 200);
  const emails = (await h.db.selectFrom("members").select("email").orderBy("email").execute()).map((r) => r.email);
  assert.deepEqual(emails, ["after@example.org", "before@example.org"]);
  assert.ok(
    h.logs.some((l) => l.includes('"code":"unavailable"') || l.includes("unavailable")),
    "the outage is logged",
  );
});
