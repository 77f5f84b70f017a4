// D4: "bad input gets a clear error and changes nothing", for every endpoint that takes a body;
// plus the D2 origin check. Each barrage counts the rows of every table before and after.
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { MAX_BODY_DEPTH } from "../src/rules.js";
import { rowCounts } from "./support/database.js";
import { adminHeaders, operatorHeaders } from "./support/flows.js";
import {
  createHarness,
  deliverWebhooks,
  get,
  login,
  OTHER_STRONG_PASSWORD,
  post,
  registerVerifiedMember,
  sessionCookieOf,
  STRONG_PASSWORD,
  type Harness,
} from "./support/harness.js";

const TABLES = [
  "applications",
  "tenants",
  "members",
  "one_time_tokens",
  "sessions",
  "webhook_deliveries",
  "audit_events",
  "rate_limit_counters",
  "login_lockouts",
];
const LONG = "a".repeat(10_000);

type Auth = "none" | "cookie" | "admin" | "operator";

interface Endpoint {
  url: string;
  auth: Auth;
  /** A body that passes validation. */
  body: (fixture: Fixture) => Record<string, unknown>;
  required: string[];
  /** Every string field, required or optional. */
  strings: string[];
}

interface Fixture {
  h: Harness;
  recordId: string;
  cookie: string;
}

const botToken = { "bot-challenge-response": "x" };

const endpoints: Endpoint[] = [
  {
    url: "/auth/register-password",
    auth: "none",
    body: () => ({ email: "new@example.org", name: "New Member", password: STRONG_PASSWORD, ...botToken }),
    required: ["email", "name", "password"],
    strings: ["email", "name", "password", "bot-challenge-response"],
  },
  {
    url: "/auth/verify-email",
    auth: "none",
    body: (f) => ({ recordId: f.recordId, token: "A".repeat(43) }),
    required: ["recordId", "token"],
    strings: ["recordId", "token"],
  },
  {
    url: "/auth/login",
    auth: "none",
    body: () => ({ email: "member@example.org", password: STRONG_PASSWORD, ...botToken }),
    required: ["email", "password"],
    strings: ["email", "password", "twoFACode", "bot-challenge-response"],
  },
  {
    url: "/auth/forgot-password",
    auth: "none",
    body: () => ({ email: "member@example.org", ...botToken }),
    required: ["email"],
    strings: ["email", "bot-challenge-response"],
  },
  {
    url: "/auth/reset-password",
    auth: "none",
    body: (f) => ({ recordId: f.recordId, token: "A".repeat(43), newPassword: OTHER_STRONG_PASSWORD }),
    required: ["recordId", "token", "newPassword"],
    strings: ["recordId", "token", "newPassword"],
  },
  {
    url: "/auth/change-password",
    auth: "cookie",
    body: () => ({ currentPassword: STRONG_PASSWORD, newPassword: OTHER_STRONG_PASSWORD }),
    required: ["currentPassword", "newPassword"],
    strings: ["currentPassword", "newPassword"],
  },
  {
    url: "/auth/resend-verification",
    auth: "none",
    body: () => ({ email: "member@example.org", ...botToken }),
    required: ["email"],
    strings: ["email", "bot-challenge-response"],
  },
  {
    url: "/auth/lock-account",
    auth: "admin",
    body: (f) => ({ recordId: f.recordId, action: "lock" }),
    required: ["recordId", "action"],
    strings: ["recordId", "action", "email"],
  },
  {
    url: "/auth/admin/resend-verification-email",
    auth: "admin",
    body: (f) => ({ recordId: f.recordId, email: "member@example.org" }),
    required: ["recordId", "email"],
    strings: ["recordId", "email"],
  },
  {
    url: "/auth/admin/require-password-change",
    auth: "admin",
    body: (f) => ({ recordId: f.recordId }),
    required: ["recordId"],
    strings: ["recordId"],
  },
  {
    url: "/operator/tenants",
    auth: "operator",
    body: (f) => ({
      domain: "fresh.example.com",
      settings: {
        emailVerificationWebhook: `${f.h.receiver.url}/verify`,
        passwordResetWebhook: `${f.h.receiver.url}/reset`,
        magicLoginWebhook: `${f.h.receiver.url}/magic`,
        botProtection: { provider: "none" },
      },
    }),
    required: ["domain", "settings"],
    strings: ["domain", "applicationId"],
  },
];

function authHeaders(f: Fixture, auth: Auth): Record<string, string> {
  switch (auth) {
    case "none":
      return { "x-tenant-domain": f.h.tenant.domain };
    case "cookie":
      return { "x-tenant-domain": f.h.tenant.domain, cookie: `session_id=${f.cookie}` };
    case "admin":
      return { "x-tenant-domain": f.h.tenant.domain, ...adminHeaders(f.h) };
    case "operator":
      return operatorHeaders();
  }
}

interface RawRequest {
  payload: string | Buffer;
  contentType?: string;
  headers?: Record<string, string>;
}

function send(f: Fixture, endpoint: Endpoint, request: RawRequest): Promise<LightMyRequestResponse> {
  return f.h.app.inject({
    method: "POST",
    url: endpoint.url,
    payload: request.payload,
    remoteAddress: "203.0.113.99",
    headers: {
      ...authHeaders(f, endpoint.auth),
      ...(request.contentType === undefined ? {} : { "content-type": request.contentType }),
      ...request.headers,
    },
  });
}

function sendJson(f: Fixture, endpoint: Endpoint, body: unknown, headers?: Record<string, string>): Promise<LightMyRequestResponse> {
  return send(f, endpoint, { payload: JSON.stringify(body), contentType: "application/json", headers });
}

/** The D4 body: exactly success, code, message, requestId (+ authorized:false on /auth/login, + details). */
function assertErrorBody(response: LightMyRequestResponse, status: number, code: string, url: string, label: string): Record<string, unknown> {
  const where = `${label} on ${url}: ${response.statusCode} ${response.body}`;
  assert.ok(response.statusCode < 500, `5xx for ${where}`);
  assert.equal(response.statusCode, status, where);
  assert.match(String(response.headers["content-type"]), /^application\/json/, where);
  const body = response.json<Record<string, unknown>>();
  assert.equal(body.success, false, where);
  assert.equal(body.code, code, where);
  assert.equal(typeof body.message, "string", where);
  assert.ok((body.message as string).length > 0, where);
  assert.equal(typeof body.requestId, "string", where);
  const expected = ["success", "code", "message", "requestId"];
  if (url === "/auth/login") {
    assert.equal(body.authorized, false, `authorized:false missing: ${where}`);
    expected.push("authorized");
  }
  if ("details" in body) expected.push("details");
  assert.deepEqual(Object.keys(body).sort(), expected.sort(), where);
  assert.ok(!/\n\s*at |\bat [^\s]+ \(|\.(ts|js):\d+/.test(response.body), `stack trace in ${where}`);
  assert.ok(!/\b(select|insert into|delete from|sqlite|kysely)\b|update \w+ set/i.test(response.body), `SQL in ${where}`);
  return body;
}

async function countRows(h: Harness): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of TABLES) {
    const row = await h.db
      .selectFrom(table as "members")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .executeTakeFirstOrThrow();
    counts[table] = Number(row.n);
  }
  return counts;
}

/** A member, a live session, a delivered webhook: then every request of `barrage` must be refused and change nothing. */
async function withBarrage(barrage: (f: Fixture) => Promise<void>): Promise<void> {
  const h = await createHarness();
  try {
    const recordId = await registerVerifiedMember(h, "member@example.org");
    const cookie = sessionCookieOf(await login(h, "member@example.org"));
    assert.ok(cookie);
    const f: Fixture = { h, recordId, cookie };
    const before = await countRows(h);
    assert.ok(before.members === 1 && before.sessions === 1 && before.audit_events! >= 3, JSON.stringify(before));
    const received = h.receiver.received.length;

    await barrage(f);

    assert.deepEqual(await countRows(h), before, "bad input wrote nothing");
    assert.equal(await deliverWebhooks(h), 0);
    assert.equal(h.receiver.received.length, received);
    // The member is untouched: the old password still logs in, the session still works.
    assert.equal((await get(h, "/auth/session", { cookie })).statusCode, 200);
    const again = await login(h, "member@example.org");
    assert.equal(again.statusCode, 200, again.body);
  } finally {
    await h.close();
  }
}

test("malformed, empty and non-object JSON -> 400 validation_failed on every endpoint", async () => {
  await withBarrage(async (f) => {
    for (const endpoint of endpoints) {
      for (const payload of ['{"email":', "{", '{"email": "a@b.c",}', "", "null", "[]", '"text"', "42", "true"]) {
        const response = await send(f, endpoint, { payload, contentType: "application/json" });
        assertErrorBody(response, 400, "validation_failed", endpoint.url, `payload ${JSON.stringify(payload)}`);
      }
    }
  });
});

test("each missing required field -> 400 validation_failed with details", async () => {
  await withBarrage(async (f) => {
    for (const endpoint of endpoints) {
      for (const field of endpoint.required) {
        const body = endpoint.body(f);
        delete body[field];
        const response = await sendJson(f, endpoint, body);
        const error = assertErrorBody(response, 400, "validation_failed", endpoint.url, `without ${field}`);
        assert.ok(Array.isArray(error.details) && error.details.length > 0, `details for missing ${field} on ${endpoint.url}: ${response.body}`);
      }
      const empty = await sendJson(f, endpoint, {});
      assertErrorBody(empty, 400, "validation_failed", endpoint.url, "empty object");
    }
  });
});

test("wrong types (number, boolean, null, array, object) -> 400 validation_failed, never coerced", async () => {
  await withBarrage(async (f) => {
    for (const endpoint of endpoints) {
      for (const field of endpoint.strings) {
        for (const value of [12345, true, null, ["a@example.org"], { value: "x" }]) {
          const response = await sendJson(f, endpoint, { ...endpoint.body(f), [field]: value });
          const error = assertErrorBody(response, 400, "validation_failed", endpoint.url, `${field}=${JSON.stringify(value)}`);
          assert.ok(Array.isArray(error.details), `details on ${endpoint.url} ${field}`);
        }
      }
    }
    // Enumerations and nested objects.
    const lock = endpoints.find((e) => e.url === "/auth/lock-account")!;
    for (const action of ["delete", "LOCK", ""]) {
      assertErrorBody(await sendJson(f, lock, { ...lock.body(f), action }), 400, "validation_failed", lock.url, `action=${action}`);
    }
    const operatorCreate = endpoints.find((e) => e.url === "/operator/tenants")!;
    for (const settings of ["none", 1, [], null]) {
      assertErrorBody(
        await sendJson(f, operatorCreate, { ...operatorCreate.body(f), settings }),
        400,
        "validation_failed",
        operatorCreate.url,
        `settings=${JSON.stringify(settings)}`,
      );
    }
  });
});

test("over-long strings (10,000 characters) -> 400 validation_failed", async () => {
  await withBarrage(async (f) => {
    for (const endpoint of endpoints) {
      for (const field of endpoint.strings) {
        const response = await sendJson(f, endpoint, { ...endpoint.body(f), [field]: LONG });
        assertErrorBody(response, 400, "validation_failed", endpoint.url, `${field} of 10,000 chars`);
      }
    }
  });
});

test("bodies over 16 KiB -> 413 payload_too_large", async () => {
  await withBarrage(async (f) => {
    for (const endpoint of endpoints) {
      const huge = { ...endpoint.body(f), padding: "p".repeat(16 * 1024) };
      const response = await sendJson(f, endpoint, huge);
      assertErrorBody(response, 413, "payload_too_large", endpoint.url, "17 KiB body");
      const hugeField = await sendJson(f, endpoint, { ...endpoint.body(f), [endpoint.strings[0]!]: "x".repeat(20_000) });
      assertErrorBody(hugeField, 413, "payload_too_large", endpoint.url, "20,000-char field");
    }
  });
});

test("bodies that are not JSON media types -> 415 unsupported_media_type", async () => {
  await withBarrage(async (f) => {
    for (const endpoint of endpoints) {
      const json = JSON.stringify(endpoint.body(f));
      for (const contentType of ["application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml", "text/json"]) {
        assertErrorBody(await send(f, endpoint, { payload: json, contentType }), 415, "unsupported_media_type", endpoint.url, contentType);
      }
      assertErrorBody(await send(f, endpoint, { payload: json }), 415, "unsupported_media_type", endpoint.url, "no content-type");
    }
  });
});

test("text/plain bodies -> 415 unsupported_media_type", async () => {
  await withBarrage(async (f) => {
    for (const endpoint of endpoints) {
      const json = JSON.stringify(endpoint.body(f));
      for (const contentType of ["text/plain", "text/plain; charset=utf-8"]) {
        assertErrorBody(await send(f, endpoint, { payload: json, contentType }), 415, "unsupported_media_type", endpoint.url, contentType);
      }
    }
  });
});

test("unknown tenant -> 404 unknown_tenant on every tenant endpoint, even with a valid body, cookie or key", async () => {
  await withBarrage(async (f) => {
    for (const endpoint of endpoints.filter((e) => e.auth !== "operator")) {
      for (const domain of ["unknown.example.net", "members.example.com.evil.example", "MEMBERS.example.org"]) {
        const response = await sendJson(f, endpoint, endpoint.body(f), { "x-tenant-domain": domain });
        assertErrorBody(response, 404, "unknown_tenant", endpoint.url, `tenant ${domain}`);
      }
      // Without X-Tenant-Domain the Host names the tenant (D2).
      const byHost = await f.h.app.inject({
        method: "POST",
        url: endpoint.url,
        payload: endpoint.body(f),
        headers: { host: "unknown.example.net:8443", ...(endpoint.auth === "admin" ? adminHeaders(f.h) : {}) },
      });
      assertErrorBody(byHost, 404, "unknown_tenant", endpoint.url, "unknown Host");
    }
  });
});

test("values over the D8 limits but inside the schema bounds -> 400 validation_failed, before any counter is written", async () => {
  await withBarrage(async (f) => {
    const longEmail = `${"e".repeat(290)}@example.org`; // 302 characters: D8 allows 254
    const longName = "N".repeat(150); // D8 allows 100
    const cases: [string, Record<string, unknown>][] = [
      ["/auth/register-password", { email: longEmail, name: "Ok Name", password: STRONG_PASSWORD, ...botToken }],
      ["/auth/register-password", { email: "fine@example.org", name: longName, password: STRONG_PASSWORD, ...botToken }],
      ["/auth/register-password", { email: "fine@example.org", name: "Bell\u0007Name", password: STRONG_PASSWORD, ...botToken }],
      ["/auth/register-password", { email: "no-at-sign.example.org", name: "Ok Name", password: STRONG_PASSWORD, ...botToken }],
      ["/auth/forgot-password", { email: longEmail, ...botToken }],
      ["/auth/resend-verification", { email: longEmail, ...botToken }],
    ];
    for (const [url, body] of cases) {
      const response = await post(f.h, url, body, { ip: "203.0.113.98" });
      assertErrorBody(response, 400, "validation_failed", url, JSON.stringify(body).slice(0, 60));
    }
  });
});

test("the requestId of an error is in the log line of that request", async () => {
  await withBarrage(async (f) => {
    const endpoint = endpoints[0]!;
    const response = await send(f, endpoint, { payload: '{"email":', contentType: "application/json" });
    const { requestId } = assertErrorBody(response, 400, "validation_failed", endpoint.url, "malformed");
    assert.ok(
      f.h.logs.some((line) => line.includes(String(requestId))),
      "requestId appears in the logs",
    );
  });
});

test("unknown routes and methods -> 404 with the D4 body", async () => {
  const h = await createHarness();
  try {
    const cases: { method: "GET" | "POST" | "PUT" | "DELETE"; url: string }[] = [
      { method: "GET", url: "/" },
      { method: "GET", url: "/nope" },
      { method: "POST", url: "/auth/nope" },
      { method: "GET", url: "/auth/login" },
      { method: "DELETE", url: "/auth/session" },
      { method: "PUT", url: "/operator/tenants" },
      { method: "GET", url: "/../../etc/passwd" },
    ];
    for (const { method, url } of cases) {
      const response = await h.app.inject({ method, url, headers: { "x-tenant-domain": h.tenant.domain } });
      assertErrorBody(response, 404, "not_found", `${method} ${url}`, "unknown route");
    }
  } finally {
    await h.close();
  }
});

/** The request's own log lines hold its id and a line saying why it was refused. */
function assertLoggedRefusal(h: Harness, requestId: unknown, where: string): void {
  const lines = h.logs.filter((line) => line.includes(`"reqId":"${String(requestId)}"`));
  assert.ok(
    lines.some((line) => /"msg":"(request refused|no route)"/.test(line)),
    `no log line for ${where}`,
  );
}

test("D21: router errors (bad URL, over-long parameter or URL) answer the D4 body with a requestId, are logged and change nothing", async () => {
  await withBarrage(async (f) => {
    const headers = { "x-tenant-domain": f.h.tenant.domain, "content-type": "application/json" };
    const magic = (token: string) => `/auth/verify-magic-link/${f.recordId}/${token}`;
    const cases: { method: "GET" | "POST"; url: string; status: number; code: string }[] = [
      { method: "GET", url: "/%", status: 400, code: "validation_failed" },
      { method: "GET", url: "/ui/reset-password/1/%ZZ", status: 400, code: "validation_failed" },
      { method: "POST", url: "/auth/%E0%A4%A", status: 400, code: "validation_failed" },
      // The longest token the schema allows reaches the flow (an unknown link); a longer one is the
      // schema's 400, and only a parameter longer than any schema allows (a 253-character domain) is 414.
      { method: "POST", url: magic("T".repeat(128)), status: 400, code: "invalid_token" },
      { method: "POST", url: magic("T".repeat(101)), status: 400, code: "invalid_token" },
      { method: "POST", url: magic("T".repeat(129)), status: 400, code: "validation_failed" },
      { method: "POST", url: magic("T".repeat(254)), status: 414, code: "validation_failed" },
      { method: "GET", url: `/reset-password/${f.recordId}/${"T".repeat(254)}`, status: 414, code: "validation_failed" },
      { method: "GET", url: `/operator/tenants/${"d".repeat(60)}.${"e".repeat(60)}.${"f".repeat(60)}.example.org`, status: 404, code: "unknown_tenant" },
      { method: "POST", url: `/auth/login/${"x".repeat(3000)}`, status: 414, code: "validation_failed" },
      { method: "GET", url: `/auth/session?x=${"y".repeat(3000)}`, status: 414, code: "validation_failed" },
    ];
    for (const { method, url, status, code } of cases) {
      const where = `${method} ${url.slice(0, 60)}`;
      const auth = url.startsWith("/operator/") ? operatorHeaders() : {};
      const response = await f.h.app.inject({ method, url, headers: { ...headers, ...auth }, payload: method === "POST" ? "{}" : undefined });
      const body = assertErrorBody(response, status, code, url, where);
      assert.equal(response.headers["x-request-id"], body.requestId, `x-request-id of ${where}`);
      if (code === "validation_failed") assertLoggedRefusal(f.h, body.requestId, where);
    }
  });
});

test("D21: an unknown route is logged with its request id", async () => {
  const h = await createHarness();
  try {
    const response = await h.app.inject({ method: "GET", url: "/nope" });
    const body = assertErrorBody(response, 404, "not_found", "/nope", "unknown route");
    assertLoggedRefusal(h, body.requestId, "/nope");
  } finally {
    await h.close();
  }
});

/** A raw request over a real socket: no client-side normalisation of `..`, any bytes in the request line. */
function rawRequest(port: number, path: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: "127.0.0.1", port, path, method: "GET" }, (response) => {
      let body = "";
      response.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
    });
    request.on("error", reject);
    request.end();
  });
}

test("D21: over a real socket, path traversal out of /docs/static is 404 (not 500) and a request line over Node's limit gets the D4 body", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await h.app.listen({ port: 0, host: "127.0.0.1" });
  const { port } = h.app.server.address() as AddressInfo;
  const paths = {
    "/docs/static/../../package.json": 404,
    "/docs/static/%2e%2e/%2e%2e/package.json": 404,
    "/docs/static/a/../../../x": 404,
    "/docs/static/%00": 400,
  };
  for (const [path, status] of Object.entries(paths)) {
    const response = await rawRequest(port, path);
    assert.equal(response.status, status, `${path}: ${response.body}`);
    const body = JSON.parse(response.body) as Record<string, unknown>;
    assert.equal(body.code, status === 404 ? "not_found" : "validation_failed", path);
    assert.equal(body.requestId, response.headers["x-request-id"], path);
    assert.ok(!response.body.includes("latch"), "no file content");
  }
  const huge = await rawRequest(port, `/x${"y".repeat(20_000)}`);
  assert.equal(huge.status, 431);
  const body = JSON.parse(huge.body) as Record<string, unknown>;
  assert.deepEqual(Object.keys(body).sort(), ["code", "message", "requestId", "success"]);
  assert.equal(body.code, "validation_failed");
  assert.equal(body.requestId, huge.headers["x-request-id"]);
  assert.ok(
    h.logs.some((line) => line.includes(`"reqId":"${String(body.requestId)}"`) && line.includes("HPE_HEADER_OVERFLOW")),
    "logged",
  );
  assert.ok(!h.logs.some((line) => line.includes("yyyyyyyyyy")), "the raw request is not logged");
  assert.ok(!h.logs.some((line) => line.includes('"level":50')), "no error-level line");
});

test("origin check (D2): a cookie-carrying request from a foreign origin -> 403 origin_mismatch", async () => {
  const h = await createHarness({ settings: { allowedOrigins: ["https://app.example.org"] } });
  try {
    await registerVerifiedMember(h, "origin@example.org");
    const cookie = sessionCookieOf(await login(h, "origin@example.org"))!;
    assert.ok(cookie);

    // D30: the tenant's own hostname over plain http is a page anyone on its path can rewrite.
    for (const origin of [
      "https://evil.example",
      "null",
      "https://members.example.com.evil.example",
      "https://evil.example:443",
      "not a url",
      "http://members.example.com",
      "ftp://members.example.com",
    ]) {
      const session = await get(h, "/auth/session", { cookie, headers: { origin } });
      assertErrorBody(session, 403, "origin_mismatch", "/auth/session", `origin ${origin}`);
      const change = await post(
        h,
        "/auth/change-password",
        { currentPassword: STRONG_PASSWORD, newPassword: OTHER_STRONG_PASSWORD },
        { cookie, headers: { origin } },
      );
      assertErrorBody(change, 403, "origin_mismatch", "/auth/change-password", `origin ${origin}`);
      const logout = await post(h, "/auth/logout", {}, { cookie, headers: { origin } });
      assertErrorBody(logout, 403, "origin_mismatch", "/auth/logout", `origin ${origin}`);
    }
    // Nothing changed: the old password still works and the session is alive.
    assert.equal((await get(h, "/auth/session", { cookie })).statusCode, 200);

    // The tenant's own origin and an allowed origin pass.
    for (const origin of ["https://members.example.com", "https://members.example.com:8443", "https://app.example.org"]) {
      const session = await get(h, "/auth/session", { cookie, headers: { origin } });
      assert.equal(session.statusCode, 200, `${origin}: ${session.body}`);
    }
    const change = await post(
      h,
      "/auth/change-password",
      { currentPassword: STRONG_PASSWORD, newPassword: OTHER_STRONG_PASSWORD },
      { cookie, headers: { origin: "https://members.example.com" } },
    );
    assert.equal(change.statusCode, 200, change.body);

    // Without the cookie an odd origin is not refused (no ambient credential to abuse).
    const forgot = await post(h, "/auth/forgot-password", { email: "origin@example.org", ...botToken }, { headers: { origin: "https://evil.example" } });
    assert.equal(forgot.statusCode, 200, forgot.body);
    const loggedIn = await login(h, "origin@example.org", OTHER_STRONG_PASSWORD, { headers: { origin: "https://evil.example" } });
    assert.notEqual(loggedIn.json().code, "origin_mismatch");
    assert.equal(loggedIn.statusCode, 200, loggedIn.body);
  } finally {
    await h.close();
  }
});

test("a NUL character in a path parameter, a query or any body string is 400 validation_failed before any route runs: PostgreSQL refuses NUL in text, and no valid value holds one", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const before = await rowCounts(h);
  const send = (method: "GET" | "POST" | "DELETE", url: string, payload?: Record<string, unknown>) =>
    h.app.inject({ method, url, ...(payload ? { payload } : {}), headers: { "x-tenant-domain": h.tenant.domain } });
  for (const res of [
    await send("POST", "/auth/request-magic-link", { email: "a\u0000b@example.org", "bot-challenge-response": "x" }),
    await send("POST", "/auth/verify-login-code", { email: "a@example.org", code: "123456", "bot-challenge-response": "x\u0000" }),
    await send("POST", "/auth/login", { email: "a@example.org", password: "pass\u0000word", nested: { deep: ["\u0000"] } }),
    await send("DELETE", "/auth/sessions/%00"),
    await send("GET", "/auth/admin/audit-log?recordId=%00"),
  ]) {
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(res.json<{ code: string }>().code, "validation_failed");
  }
  assert.deepEqual(await rowCounts(h), before);
});

test("issue 16: Content-Type application/json with an empty body is no body: logout and 2FA setup answer 200; a route that needs a body still says 400 validation_failed", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await registerVerifiedMember(h, "empty.body@example.org");
  const cookie = sessionCookieOf(await login(h, "empty.body@example.org"))!;
  const send = (url: string) =>
    h.app.inject({
      method: "POST",
      url,
      payload: "",
      headers: { "x-tenant-domain": h.tenant.domain, "content-type": "application/json", cookie: `session_id=${cookie}` },
    });
  const setup = await send("/auth/2fa/setup");
  assert.equal(setup.statusCode, 200, setup.body);
  assert.equal((await send("/auth/logout")).statusCode, 200);
  const refused = await send("/auth/login");
  assert.equal(refused.statusCode, 400, refused.body);
  assert.equal(refused.json<{ code: string }>().code, "validation_failed");
});

/** `levels` arrays or objects inside one another around `core`: `[[[1]]]`, `{"a":{"a":1}}`. */
function nested(kind: "array" | "object", levels: number, core = "1"): string {
  return kind === "array" ? "[".repeat(levels) + core + "]".repeat(levels) : '{"a":'.repeat(levels) + core + "}".repeat(levels);
}

test('D30: deeply nested JSON within the size limit (~10 KB of [[[…]]] or {"a":{…}}) is 400 validation_failed on every JSON route and hosted page, logged at info, never a 500 or an error line', async () => {
  await withBarrage(async (f) => {
    const { h } = f;
    const deep = [nested("array", 5_000), nested("object", 1_600), `{"email":${nested("array", 4_000)}}`, nested("array", MAX_BODY_DEPTH + 1)];
    const passkeyAnswer = (extensions: string) =>
      `{"response":{"id":"AAAA","rawId":"AAAA","type":"public-key","response":{"clientDataJSON":"e30","authenticatorData":"AA","signature":"AA"},"clientExtensionResults":${extensions}}}`;
    deep.push(passkeyAnswer(nested("object", 1_500, "{}")));
    const routes: { method: "POST" | "PATCH"; url: string; headers: Record<string, string> }[] = [
      ...endpoints.map((e) => ({ method: "POST" as const, url: e.url, headers: authHeaders(f, e.auth) })),
      { method: "PATCH", url: "/auth/me", headers: authHeaders(f, "cookie") },
      { method: "POST", url: "/auth/passkeys/login/verify", headers: authHeaders(f, "none") },
      { method: "PATCH", url: `/operator/tenants/${h.tenant.domain}`, headers: operatorHeaders() },
    ];
    for (const route of routes) {
      for (const payload of deep) {
        assert.ok(payload.length <= 16 * 1024, "within the body limit");
        const response = await h.app.inject({
          method: route.method,
          url: route.url,
          payload,
          remoteAddress: "203.0.113.99",
          headers: { ...route.headers, "content-type": "application/json" },
        });
        const body = assertErrorBody(response, 400, "validation_failed", route.url, `${payload.length} characters nested`);
        assert.deepEqual(
          (body.details as { rule: string }[]).map((d) => d.rule),
          ["max_depth"],
          response.body,
        );
        assertLoggedRefusal(h, body.requestId, `${route.method} ${route.url}`);
      }
    }
    // The hosted pages take JSON too (the enhanced forms): a 400 page, not "Something went wrong".
    for (const url of ["/ui/login", "/ui/register"]) {
      const page = await h.app.inject({
        method: "POST",
        url,
        payload: nested("array", 5_000),
        headers: { host: h.tenant.domain, origin: `https://${h.tenant.domain}`, "content-type": "application/json" },
      });
      assert.equal(page.statusCode, 400, `${url}: ${page.body.slice(0, 300)}`);
      assert.match(String(page.headers["content-type"]), /^text\/html/);
    }
    // A form body cannot nest (URLSearchParams: one level of names and strings); names that look
    // nested are plain names, and the page answers as for any form without its fields.
    const form = await h.app.inject({
      method: "POST",
      url: "/ui/login",
      payload: `${"a".concat("[b]".repeat(3_000))}=1&email=`,
      headers: { host: h.tenant.domain, origin: `https://${h.tenant.domain}`, "content-type": "application/x-www-form-urlencoded" },
    });
    assert.equal(form.statusCode, 400, form.body.slice(0, 300));
    assert.ok(!h.logs.some((line) => line.includes('"level":50')), "no error-level line");
    assert.ok(!h.logs.some((line) => line.includes("Maximum call stack")), "no stack overflow");
  });
});

test("D30: a body nested exactly MAX_BODY_DEPTH deep reaches its route; one level more is refused for its depth", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const send = (levels: number) =>
    h.app.inject({
      method: "POST",
      url: "/auth/login",
      payload: `{"email":"a@example.org","password":"x","extra":${nested("object", levels - 1)}}`,
      headers: { "x-tenant-domain": h.tenant.domain, "content-type": "application/json" },
    });
  // /auth/login lets unknown fields pass: the flow answers, for the wrong password.
  assertErrorBody(await send(MAX_BODY_DEPTH), 401, "invalid_credentials", "/auth/login", "at the limit");
  const over = assertErrorBody(await send(MAX_BODY_DEPTH + 1), 400, "validation_failed", "/auth/login", "one over");
  assert.deepEqual(over.details, [{ field: "", rule: "max_depth", message: `must not nest deeper than ${MAX_BODY_DEPTH} levels` }]);
});

/** Writes `request` on a raw TCP connection and reads until the server closes it (or 5 s pass). */
function rawExchange(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(request));
    let received = "";
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no close after: ${JSON.stringify(received)}`));
    }, 5_000);
    socket.on("data", (chunk: Buffer) => (received += chunk.toString("utf8")));
    socket.on("error", reject);
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(received);
    });
  });
}

/** Status, headers (lowercased names) and JSON body of a raw HTTP/1.1 answer. */
function parseRawAnswer(raw: string): { status: number; headers: Record<string, string>; body: Record<string, unknown> } {
  const [head = "", body = ""] = raw.split("\r\n\r\n", 2);
  const [statusLine = "", ...lines] = head.split("\r\n");
  const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]));
  return { status: Number(statusLine.split(" ")[1]), headers, body: JSON.parse(body) as Record<string, unknown> };
}

test("D30, D21: every method gets an HTTP answer in the D4 shape over a real socket: CONNECT and TRACE 404 not_found, an unknown method 400; each with its requestId, logged", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await h.app.listen({ port: 0, host: "127.0.0.1" });
  const { port } = h.app.server.address() as AddressInfo;
  const cases: { request: string; status: number; code: string }[] = [
    { request: "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", status: 404, code: "not_found" },
    { request: `CONNECT ${h.tenant.domain}:443 HTTP/1.1\r\nHost: ${h.tenant.domain}:443\r\n\r\n`, status: 404, code: "not_found" },
    // A client that starts tunnelling at once: its bytes are never read as a request.
    { request: "CONNECT /auth/login HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", status: 404, code: "not_found" },
    { request: "TRACE / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", status: 404, code: "not_found" },
    { request: `TRACE /auth/login HTTP/1.1\r\nHost: ${h.tenant.domain}\r\nConnection: close\r\n\r\n`, status: 404, code: "not_found" },
    { request: "FOO / HTTP/1.1\r\nHost: x\r\n\r\n", status: 400, code: "validation_failed" },
  ];
  for (const { request, status, code } of cases) {
    const where = request.slice(0, request.indexOf("\r\n"));
    const raw = await rawExchange(port, request);
    assert.equal(raw.split("HTTP/1.1 ").length - 1, 1, `one answer to ${where}: ${raw}`);
    const answer = parseRawAnswer(raw);
    assert.equal(answer.status, status, `${where}: ${raw}`);
    assert.deepEqual(Object.keys(answer.body).sort(), ["code", "message", "requestId", "success"], where);
    assert.equal(answer.body.code, code, where);
    assert.equal(answer.headers["x-request-id"], answer.body.requestId, where);
    assertLoggedRefusal(h, answer.body.requestId, where);
  }
  // The server still answers on new connections.
  assert.equal(parseRawAnswer(await rawExchange(port, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")).status, 200);
  assert.ok(!h.logs.some((line) => line.includes('"level":50')), "no error-level line");
});

test("issue 29: a value out of a list names the allowed values once, in the body and in settings", async () => {
  const h = await createHarness();
  try {
    // A body field (a union of literals in the route schema, checked by Fastify's ajv).
    const recordId = await registerVerifiedMember(h, "listed@example.org");
    const lock = await post(h, "/auth/lock-account", { recordId, action: "delete" }, { headers: adminHeaders(h) });
    assert.equal(lock.statusCode, 400, lock.body);
    assert.deepStrictEqual(lock.json<{ details: unknown }>().details, [{ field: "action", rule: "enum", message: 'must be one of: "lock", "unlock"' }]);
    // A tenant setting (checked again by the settings' own validator) and one nested in an object.
    const patch = (settings: unknown) =>
      h.app.inject({ method: "PATCH", url: `/operator/tenants/${h.tenant.domain}`, payload: { settings }, headers: operatorHeaders() });
    const tier = await patch({ sessionTier: "2y" });
    assert.equal(tier.statusCode, 400, tier.body);
    const [tierIssue, ...others] = tier.json<{ details: Array<{ field: string; rule: string; message: string }> }>().details;
    assert.deepStrictEqual(others, [], "one issue, not one per allowed value");
    assert.equal(tierIssue!.rule, "enum");
    assert.match(tierIssue!.field, /sessionTier$/);
    for (const value of ["15m", "1d", "30d"]) assert.ok(tierIssue!.message.includes(`"${value}"`), tierIssue!.message);
    const provider = await patch({ botProtection: { provider: "captcha" } });
    const details = provider.json<{ details: Array<{ field: string; rule: string; message: string }> }>().details;
    assert.equal(details.length, 1, provider.body);
    assert.match(details[0]!.field, /botProtection\.provider$/);
    assert.equal(details[0]!.message, 'must be one of: "turnstile", "hcaptcha", "recaptcha", "altcha", "none"');
  } finally {
    await h.close();
  }
});

test("issue 29: the one email rule refuses in the schema what the flow refuses, as rule `email`, and accepts what it accepts", async () => {
  const h = await createHarness();
  try {
    for (const email of ["a@b.c", "no-at-sign.example.org", "two@@example.org", "in side@example.org", "rtl\u202e@example.org", "x@-bad.example.org"]) {
      const response = await post(h, "/auth/forgot-password", { email, ...botToken });
      assert.equal(response.statusCode, 400, `${email}: ${response.body}`);
      assert.deepStrictEqual(response.json<{ details: unknown }>().details, [{ field: "email", rule: "email", message: "must be an email address" }], email);
    }
    // What ajv-formats' `format: email` refused and the server always took: an IDN domain, a leading dot, surrounding spaces.
    for (const email of ["ada@bücher.example", ".ada@example.org", "  Ada@Example.org  ", "ada@İstanbul.example"]) {
      const response = await post(h, "/auth/forgot-password", { email, ...botToken });
      assert.equal(response.statusCode, 200, `${email}: ${response.body}`);
    }
  } finally {
    await h.close();
  }
});
