/**
 * Issue 17: a request's logger becomes a pino child only when it writes a line (the child's
 * bindings cost 7 µs of a session check). What is written must not change: the same reqId, route
 * and tenant on every line, at whatever level is on, and nothing below it.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createHarness, deliverWebhooks, login, post, registerVerifiedMember, STRONG_PASSWORD } from "./support/harness.js";
import { installStoreSeam } from "./support/store-seam.js";

type Line = Record<string, unknown>;

test("below LOG_LEVEL a request writes nothing; at or above it, its lines carry reqId, route and tenant as before", async (t) => {
  const h = await createHarness({ env: { LOG_LEVEL: "warn" } });
  t.after(() => h.close());
  h.logs.length = 0; // the harness tenant's "no bot protection" warning
  await registerVerifiedMember(h, "ada@example.org");
  const signedIn = await login(h, "ada@example.org");
  assert.equal(signedIn.statusCode, 200, signedIn.body);
  const cookie = String(signedIn.headers["set-cookie"]).split(";")[0]!;
  const refused = await login(h, "nobody@example.org");
  assert.equal(refused.statusCode, 401);
  assert.deepEqual(h.logs, [], "no info line (incoming request, request completed, refusal) at warn");

  installStoreSeam(h).fail("sessions.findLiveSession");
  const failed = await h.app.inject({ method: "GET", url: "/auth/session", headers: { "x-tenant-domain": h.tenant.domain, cookie } });
  assert.equal(failed.statusCode, 503, failed.body);
  const written = h.logs.map((line) => JSON.parse(line) as Line);
  assert.equal(written.length, 1, JSON.stringify(written));
  assert.deepEqual(
    { msg: written[0]!.msg, level: written[0]!.level, reqId: written[0]!.reqId, route: written[0]!.route, tenant: written[0]!.tenant },
    { msg: "request failed", level: 50, reqId: failed.headers["x-request-id"], route: "/auth/session", tenant: h.tenant.domain },
  );
});

test("at info every request still has its two lines, with reqId, route and tenant", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const refused = await login(h, "nobody@example.org");
  const lines = h.logs.map((line) => JSON.parse(line) as Line).filter((l) => l.reqId === refused.headers["x-request-id"]);
  assert.deepEqual(
    lines.map((l) => l.msg),
    ["incoming request", "request completed"],
  );
  for (const line of lines) assert.deepEqual([line.route, line.tenant], ["/auth/login", h.tenant.domain]);
});

test("issue 29: log lines name a tenant by its domain, never by the internal id no API or CLI shows (flows, dispatcher)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const internalId = (await h.deps.store.tenants.findTenantByDomain(h.tenant.domain))!.id;
  h.logs.length = 0;
  // Five IPs registering one email: the flow's own warning (apart from the request's line).
  for (let i = 1; i <= 5; i++) {
    await post(
      h,
      "/auth/register-password",
      { email: "ada@example.org", name: "Ada", password: STRONG_PASSWORD, "bot-challenge-response": "x" },
      { ip: `198.51.100.${i}` },
    );
  }
  await deliverWebhooks(h);
  const lines = h.logs.map((line) => JSON.parse(line) as Line);
  const warned = lines.find((l) => l.msg === "many IPs registering one email");
  const delivered = lines.find((l) => l.msg === "webhook delivered");
  assert.equal(warned?.tenant, h.tenant.domain, JSON.stringify(warned));
  assert.equal(delivered?.tenant, h.tenant.domain, JSON.stringify(delivered));
  assert.ok(!h.logs.join("").includes(internalId), "no line holds the tenant's internal id");
  for (const line of lines) assert.equal(line.tenantId, undefined, JSON.stringify(line));
});
