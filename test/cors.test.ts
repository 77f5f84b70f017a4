/**
 * CORS (D1 `allowedOrigins`, docs/decisions.md "Browsers on other origins"): only a listed origin may
 * read answers, with credentials; a preflight allows GET/POST and Content-Type only; everything else
 * gets no CORS header, so the browser keeps the answer from the page.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { assertError } from "./support/assertions.js";
import { createHarness, get, login, registerVerifiedMember, sessionCookieOf, type Harness } from "./support/harness.js";

const ALLOWED = "https://app.example.org";

function preflight(h: Harness, origin: string | undefined, method = "POST", requestHeaders?: string) {
  return h.app.inject({
    method: "OPTIONS",
    url: "/auth/login",
    headers: {
      host: h.tenant.domain,
      ...(origin ? { origin } : {}),
      "access-control-request-method": method,
      ...(requestHeaders ? { "access-control-request-headers": requestHeaders } : {}),
    },
  });
}

test("preflight: an allowed origin may POST JSON with credentials; nothing wider is granted", async () => {
  const h = await createHarness({ settings: { allowedOrigins: [ALLOWED] } });
  try {
    const ok = await preflight(h, ALLOWED, "POST", "content-type");
    assert.equal(ok.statusCode, 204, ok.body);
    assert.equal(ok.headers["access-control-allow-origin"], ALLOWED);
    assert.equal(ok.headers["access-control-allow-credentials"], "true");
    assert.equal(ok.headers["access-control-allow-methods"], "GET, POST, PATCH, DELETE", "D24's PATCH /auth/me and DELETE /auth/sessions/{id} too");
    assert.equal(ok.headers["access-control-allow-headers"], "Content-Type");
    assert.equal(ok.headers.vary, "Origin");

    // A foreign origin, a look-alike or no origin: refused, and nothing names them.
    for (const origin of ["https://evil.example", "https://app.example.org.evil.example", "http://app.example.org", undefined]) {
      const response = await preflight(h, origin);
      assertError(response, 403, "origin_mismatch");
      assert.equal(response.headers["access-control-allow-origin"], undefined, String(origin));
      assert.equal(response.headers["access-control-allow-methods"], undefined, String(origin));
    }
    // The listed origin asking for a method Latch has no route for, the admin key's header or X-Tenant-Domain: refused.
    for (const [method, headers] of [
      ["PUT", undefined],
      ["POST", "content-type, authorization"],
      ["POST", "x-tenant-domain"],
    ] as const) {
      const response = await preflight(h, ALLOWED, method, headers);
      assertError(response, 403, "origin_mismatch");
      assert.equal(response.headers["access-control-allow-origin"], undefined, `${method} ${headers}: a refusal grants nothing`);
      assert.equal(response.headers["access-control-allow-credentials"], undefined, `${method} ${headers}`);
      assert.equal(response.headers["access-control-allow-methods"], undefined, `${method} ${headers}`);
      assert.equal(response.headers["access-control-allow-headers"], undefined, `${method} ${headers}`);
    }
  } finally {
    await h.close();
  }
});

test("answers carry CORS headers only for a listed origin, errors included", async () => {
  const h = await createHarness({ settings: { allowedOrigins: [ALLOWED] } });
  try {
    await registerVerifiedMember(h, "cors@example.org");
    const loggedIn = await login(h, "cors@example.org", undefined, { headers: { origin: ALLOWED } });
    assert.equal(loggedIn.statusCode, 200, loggedIn.body);
    assert.equal(loggedIn.headers["access-control-allow-origin"], ALLOWED);
    assert.equal(loggedIn.headers["access-control-allow-credentials"], "true");
    assert.match(String(loggedIn.headers["access-control-expose-headers"]), /retry-after/);
    const cookie = sessionCookieOf(loggedIn)!;

    const session = await get(h, "/auth/session", { cookie, headers: { origin: ALLOWED } });
    assert.equal(session.statusCode, 200, session.body);
    assert.equal(session.headers["access-control-allow-origin"], ALLOWED);

    // An error answer to a listed origin is readable too, so the page can show its code.
    const wrong = await login(h, "cors@example.org", "Wrong-password-1", { headers: { origin: ALLOWED } });
    assertError(wrong, 401, "invalid_credentials");
    assert.equal(wrong.headers["access-control-allow-origin"], ALLOWED);

    // The tenant's own origin is same-origin: it needs and gets no CORS header.
    const own = await get(h, "/auth/session", { cookie, headers: { origin: `https://${h.tenant.domain}` } });
    assert.equal(own.statusCode, 200, own.body);
    assert.equal(own.headers["access-control-allow-origin"], undefined);

    // A foreign origin without the cookie is answered (no ambient credential) but can't read it.
    const foreign = await login(h, "cors@example.org", undefined, { headers: { origin: "https://evil.example" } });
    assert.equal(foreign.statusCode, 200, foreign.body);
    assert.equal(foreign.headers["access-control-allow-origin"], undefined);
    assert.equal(foreign.headers["access-control-allow-credentials"], undefined);
    assert.equal(foreign.headers.vary, "Origin", "a cache keeps answers to different origins apart");
    // Without Origin, too: the answer varies by Origin for a tenant that lists any.
    assert.equal((await get(h, "/auth/session", { cookie })).headers.vary, "Origin");

    // The hosted pages are same-origin only: a listed origin can't read them.
    const page = await h.app.inject({ method: "GET", url: "/ui/login", headers: { host: h.tenant.domain, origin: ALLOWED } });
    assert.equal(page.statusCode, 200);
    assert.equal(page.headers["access-control-allow-origin"], undefined);
    assert.equal(page.headers["access-control-allow-credentials"], undefined);
  } finally {
    await h.close();
  }
});

test("a tenant without allowedOrigins grants no origin", async () => {
  const h = await createHarness();
  try {
    const response = await preflight(h, "https://app.example.org");
    assertError(response, 403, "origin_mismatch");
    assert.equal(
      (await h.app.inject({ method: "GET", url: "/auth/bot-challenge", headers: { host: h.tenant.domain } })).headers.vary,
      undefined,
      "nothing varies without listed origins",
    );
  } finally {
    await h.close();
  }
});
