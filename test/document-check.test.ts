// Issue 29: the document is the server. Every answer the suites get through the test harness is
// checked against docs/openapi.json (test/support/harness.ts checkEveryAnswer), every webhook the
// harness's receiver got when it closes. This file proves the check fails where it should, and
// that addresses the server takes (internationalised, with a leading dot or surrounding spaces)
// come back in answers and webhooks that pass the document's own schema.
import assert from "node:assert/strict";
import { test } from "node:test";
import { adminHeaders } from "./support/flows.js";
import { createHarness, deliverWebhooks, get, login, parseLink, post, registerVerifiedMember, sessionCookieOf } from "./support/harness.js";
import { documentChecker, type Answer } from "./support/openapi-answers.js";

function answer(status: number, body: unknown, headers: Record<string, string | string[]> = {}): Answer {
  const all: Record<string, string | string[]> = { "content-type": "application/json; charset=utf-8", "x-request-id": "req_1", ...headers };
  return { status, header: (name) => all[name], body: JSON.stringify(body) };
}
const noRoute = () => false;
const error = (code: string) => ({ success: false, code, message: "m", requestId: "req_1" });

test("the check refuses an undocumented status, a body off its schema and an undocumented Set-Cookie, and takes a documented 414", () => {
  const checker = documentChecker();
  const [status] = checker.problemsOfRequest("POST", "/auth/login", noRoute, answer(418, error("validation_failed")));
  assert.match(String(status), /status not documented/);
  const [body] = checker.problemsOfRequest("POST", "/auth/login", noRoute, answer(200, { authorized: "yes" }));
  assert.match(String(body), /does not match the document/);
  const [cookie] = checker.problemsOfRequest("GET", "/auth/session", noRoute, answer(401, error("unauthorized"), { "set-cookie": ["session_id=; Max-Age=0"] }));
  assert.match(String(cookie), /sends set-cookie/);
  const [noRequestId] = checker.problemsOfRequest("GET", "/healthz", noRoute, {
    status: 200,
    header: (name) => (name === "content-type" ? "application/json" : undefined),
    body: '{"status":"ok"}',
  });
  assert.match(String(noRequestId), /no x-request-id/);
  assert.deepStrictEqual(checker.problemsOfRequest("GET", `/auth/passkeys`, noRoute, answer(414, error("validation_failed"))), []);
  assert.deepStrictEqual(checker.problemsOfRequest("DELETE", `/auth/sessions/${"x".repeat(30)}`, noRoute, answer(413, error("payload_too_large"))), []);
});

const checker418 = () => documentChecker().problemsOfRequest("GET", "/teapot", noRoute, answer(418, error("validation_failed")))[0];

test("an answer the document does not describe fails the request that got it", async () => {
  const h = await createHarness();
  try {
    // An operation of the document answering a status it does not list: the request throws.
    h.app.addHook("onRequest", async (request, reply) => {
      if (request.headers["x-teapot"]) await reply.code(418).send(error("validation_failed"));
    });
    await assert.rejects(h.app.inject({ method: "GET", url: "/healthz", headers: { "x-teapot": "1" } }), /does not match docs\/openapi.json[\s\S]*418/);
    // A request no route takes gets the router's 404, which passes; a 418 there would not.
    assert.equal((await h.app.inject({ method: "GET", url: "/no-such-page" })).statusCode, 404);
    assert.match(String(checker418()), /not a status the document says the router answers/);
    // And the same harness passes what the server really answers.
    assert.equal((await get(h, "/auth/session")).statusCode, 401);
  } finally {
    await h.close();
  }
});

test("addresses the server takes come back trimmed and lowercased, and match the document in answers and webhooks", async () => {
  const h = await createHarness();
  try {
    const typed = "  .Ada@Bücher.Example ";
    const recordId = await registerVerifiedMember(h, typed);
    const stored = ".ada@bücher.example";
    assert.equal(h.receiver.last("verify_email").body.email, stored);
    // Admin answers with the member's email: checked against the document by the harness.
    const found = await get(h, `/auth/admin/members?email=${encodeURIComponent(stored)}`, { headers: adminHeaders(h) });
    assert.equal(found.statusCode, 200, found.body);
    assert.deepStrictEqual(
      found.json<{ members: Array<{ email: string }> }>().members.map((m) => m.email),
      [stored],
    );
    const one = await get(h, `/auth/admin/members/${recordId}`, { headers: adminHeaders(h) });
    assert.equal(one.json<{ email: string }>().email, stored);
    const session = sessionCookieOf(await login(h, ".ADA@BÜCHER.example"));
    assert.ok(session);
    const me = await get(h, "/auth/me", { cookie: session });
    assert.equal(me.json<{ email: string }>().email, stored);
    // The reset webhook carries the normalised address too.
    await post(h, "/auth/forgot-password", { email: typed, "bot-challenge-response": "x" });
    await deliverWebhooks(h);
    assert.equal(parseLink(h.receiver.last("password_reset").body.resetLink!).recordId, recordId);
    assert.equal(h.receiver.last("password_reset").body.email, stored);
  } finally {
    await h.close(); // fails if a webhook the receiver got does not match the document
  }
});
