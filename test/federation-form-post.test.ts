/**
 * Sign in with Apple's `response_mode=form_post` within the SameSite=Lax `latch_fed` cookie
 * (decisions.md#sign-in-with-apple): an `apple` connection whose issuer is overridden to a local
 * oidc-provider (test/support/upstream-idp.ts), which answers form_post with its auto-submitting page.
 * The browser POSTs that page's fields without the cookie (a cross-site POST), follows the 303 with
 * it (a top-level GET), and lands signed in; a forged state, a bad form and a JSON body do not.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { assertError } from "./support/assertions.js";
import { adminHeaders } from "./support/flows.js";
import { createHarness, get, post, sessionCookieOf, type Harness } from "./support/harness.js";
import { failureReasonOf, setCookieValue } from "./support/federation.js";
import { startUpstreamIdp, type FormPost, type UpstreamIdp } from "./support/upstream-idp.js";

const APPLE = "apple";
const PERSON = { email: "ada.apple@example.net", verified: true, name: "Ada" };
const FORM = { "content-type": "application/x-www-form-urlencoded" };

/** A tenant with an `apple` connection to a local provider that authenticates the client as Apple does (client_secret_post). */
async function tenantWithApple(t: { after(fn: () => Promise<void>): void }): Promise<{ h: Harness; idp: UpstreamIdp; scopes: string[] }> {
  const h = await createHarness();
  t.after(() => h.close());
  const idp = await startUpstreamIdp({
    redirectUri: `https://${h.tenant.domain}/auth/federated/${APPLE}/callback`,
    tokenEndpointAuthMethod: "client_secret_post",
  });
  t.after(() => idp.close());
  const body = { id: APPLE, type: "apple", displayName: "Apple", issuer: idp.issuer, clientId: idp.client.client_id, clientSecret: idp.client.client_secret };
  const res = await post(h, "/auth/admin/connections", body, { headers: adminHeaders(h) });
  assert.equal(res.statusCode, 201, res.body);
  return { h, idp, scopes: res.json<{ connection: { scopes: string[] } }>().connection.scopes };
}

/** The start as a browser makes it: the provider's URL and the `latch_fed` cookie. */
async function start(h: Harness): Promise<{ authorizationUrl: URL; flowCookie: string }> {
  const res = await get(h, `/auth/federated/${APPLE}/start`);
  assert.equal(res.statusCode, 302, res.body);
  const flowCookie = setCookieValue(res, "latch_fed");
  assert.ok(flowCookie);
  return { authorizationUrl: new URL(String(res.headers.location)), flowCookie };
}

/** The provider's cross-site POST: no cookie of Latch's goes with it. */
async function postBack(h: Harness, form: FormPost | { action: URL; fields: URLSearchParams }): Promise<LightMyRequestResponse> {
  return post(h, `${form.action.pathname}${form.action.search}`, form.fields.toString(), { headers: FORM });
}

/** The 303's GET, with the cookie a browser sends on a top-level navigation to its path. */
async function follow(h: Harness, answer: LightMyRequestResponse, flowCookie: string): Promise<LightMyRequestResponse> {
  assert.equal(answer.statusCode, 303, answer.body);
  return get(h, String(answer.headers.location), { headers: { cookie: `latch_fed=${flowCookie}` } });
}

test("apple: the start asks for form_post and Apple's scopes; the provider's POST answers 303 to the GET callback, which signs in with the cookie", async (t) => {
  const { h, idp, scopes } = await tenantWithApple(t);
  assert.deepEqual(scopes, ["openid", "email", "name"]);
  const { authorizationUrl, flowCookie } = await start(h);
  assert.equal(authorizationUrl.searchParams.get("response_mode"), "form_post");
  assert.equal(authorizationUrl.searchParams.get("scope"), "openid email name");

  const form = await idp.signInByFormPost(authorizationUrl, PERSON);
  assert.equal(form.action.href, `https://${h.tenant.domain}/auth/federated/${APPLE}/callback`);
  assert.ok(form.fields.get("code") && form.fields.get("state"));
  // What Apple adds: an ID token and, the first time, the name; neither is passed on.
  form.fields.set("id_token", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJtYWxsb3J5In0.");
  form.fields.set("user", JSON.stringify({ name: { firstName: "Mallory" }, email: "mallory@example.net" }));
  const posted = await postBack(h, form);
  assert.equal(posted.statusCode, 303, posted.body);
  assert.equal(posted.headers["referrer-policy"], "no-referrer");
  assert.equal(posted.headers["set-cookie"], undefined, "the POST neither reads nor spends the flow");
  const location = new URL(String(posted.headers.location), "https://x.invalid");
  assert.equal(location.pathname, `/auth/federated/${APPLE}/callback`);
  assert.deepEqual([...location.searchParams.keys()].sort(), [...form.fields.keys()].filter((k) => k !== "id_token" && k !== "user").sort());
  assert.equal(location.searchParams.get("code"), form.fields.get("code"));

  const callback = await follow(h, posted, flowCookie);
  assert.equal(callback.statusCode, 302, callback.body);
  assert.ok(sessionCookieOf(callback), "signed in");
  assert.equal(idp.tokenCalls, 1, "the code was exchanged once, with the secret in the body (client_secret_post)");
  const me = await get(h, "/auth/me", { cookie: sessionCookieOf(callback)! });
  assert.equal(me.json<{ email: string }>().email, PERSON.email);
  // The code and state are masked in the request log, as on any callback.
  const code = form.fields.get("code")!;
  assert.ok(!h.logs.some((line) => line.includes(code)), "the code never reaches a log line");
});

test("apple: a POST with another state ends on the error page after the GET, and leaves the sign-in in flight", async (t) => {
  const { h, idp } = await tenantWithApple(t);
  const { authorizationUrl, flowCookie } = await start(h);
  const form = await idp.signInByFormPost(authorizationUrl, PERSON);
  const forged = new URLSearchParams(form.fields);
  forged.set("state", "forged-state-of-an-attacker");
  assert.equal(failureReasonOf(await follow(h, await postBack(h, { action: form.action, fields: forged }), flowCookie)), "invalid_response");
  // Refused before the flow is used up: the real answer still finishes.
  const callback = await follow(h, await postBack(h, form), flowCookie);
  assert.ok(sessionCookieOf(callback), callback.body);
  // Without the cookie (a POST replayed from elsewhere), the GET finds no flow.
  assert.equal(failureReasonOf(await get(h, String((await postBack(h, form)).headers.location))), "no_flow");
});

test("apple: the provider's refusal by form post is the GET callback's provider_error", async (t) => {
  const { h, idp } = await tenantWithApple(t);
  const { authorizationUrl, flowCookie } = await start(h);
  idp.denyNextSignIn();
  const form = await idp.signInByFormPost(authorizationUrl, PERSON);
  assert.equal(form.fields.get("error"), "access_denied");
  assert.equal(failureReasonOf(await follow(h, await postBack(h, form), flowCookie)), "provider_error");
  assert.equal(idp.tokenCalls, 0);
});

test("the form-post callback: a field not the provider's, repeated or too long goes to the error page; JSON is 415; the rest of the API still refuses forms", async (t) => {
  const { h } = await tenantWithApple(t);
  const path = `/auth/federated/${APPLE}/callback`;
  const errorPage = "/ui/federated-error?code=federation_failed&reason=invalid_response";
  const bad = [
    "code=c&state=s&extra=1",
    "code=c&state=s&state=t",
    `code=${"c".repeat(2049)}&state=s`,
    // Each within its field's limit, but the GET's URL would be over 2,048 characters.
    `code=${"c".repeat(1500)}&state=${"s".repeat(1500)}`,
    "",
  ];
  for (const body of bad) {
    const res = await post(h, path, body, { headers: FORM });
    assert.equal(res.statusCode, 303, `${body.slice(0, 40)}: ${res.body}`);
    assert.equal(res.headers.location, errorPage, body.slice(0, 40));
    assert.equal(res.headers["referrer-policy"], "no-referrer");
  }
  const badConnection = await post(h, "/auth/federated/Not_A_Slug/callback", "code=c&state=s", { headers: FORM });
  assert.equal(badConnection.headers.location, errorPage);
  // JSON is no provider's answer: 415, as anywhere else that gets a body it does not take.
  assertError(await post(h, path, { code: "c", state: "s" }), 415, "unsupported_media_type");
  assertError(await post(h, "/auth/login", "email=a%40example.net&password=x", { headers: FORM }), 415, "unsupported_media_type");
  assertError(await post(h, path, "code=c", { headers: FORM, domain: "unknown.example.com" }), 404, "unknown_tenant");
});
