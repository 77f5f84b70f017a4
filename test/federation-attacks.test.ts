/**
 * D27: the attacks of the review of the first federated sign-in (decisions.md#federated-sign-in), each
 * of which worked before its defence: a connection moved to another issuer kept its links; a
 * Unicode look-alike of an email matched the member; a link flow finished without the session that
 * started it, or after "this wasn't me"; a cross-site callback spent the browser's sign-in in
 * flight; a second-factor step finished with any code after "this wasn't me" reset 2FA; a short
 * authorization code reached the logs. Mix-up (RFC 9207 `iss`) is refused by openid-client.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { redactUrl } from "../src/logging.js";
import { ok } from "./support/assertions.js";
import { call, EMAIL, member, secureLinkOf, sendAlertsAndEvents, signIn } from "./support/account.js";
import { adminHeaders } from "./support/flows.js";
import { createHarness, get, post, sessionCookieOf, STRONG_PASSWORD } from "./support/harness.js";
import { CONNECTION, connectUpstream, failureReasonOf, federatedRoundTrip, setCookieValue } from "./support/federation.js";
import { totpAt } from "./support/totp.js";
import { startUpstreamIdp } from "./support/upstream-idp.js";

test("D27 a connection moved to another issuer loses its links: the same subject at the new provider is nobody's", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  await sendAlertsAndEvents(h);
  const first = await connectUpstream(h, t);
  ok(await call(h, "GET", "/auth/me", sessionCookieOf((await federatedRoundTrip(h, first, { email: "victim@example.net", verified: true })).callback)));
  const second = await startUpstreamIdp({
    redirectUri: `https://${h.tenant.domain}/auth/federated/${CONNECTION}/callback`,
    tokenEndpointAuthMethod: "client_secret_basic",
  });
  t.after(() => second.close());
  h.clock.advance(1000);
  ok(await call(h, "PATCH", `/auth/admin/connections/${CONNECTION}`, undefined, { issuer: second.issuer }, adminHeaders(h)));
  assert.equal((await h.db.selectFrom("federated_identities").selectAll().execute()).length, 0);
  // The new provider's person has the same `sub` (its subjects derive from the email) and no confirmed email.
  const trip = await federatedRoundTrip(h, second, { email: "victim@example.net", verified: false });
  assert.equal(failureReasonOf(trip.callback), "email_not_confirmed");
});

test("D27 an email that only Unicode lowercasing makes a member's (a Kelvin sign for K) is not that member's, nor a new one's", async (t) => {
  const { h } = await member(t, { email: "kim@example.org" });
  const idp = await connectUpstream(h, t);
  for (const email of ["\u212Aim@example.org", "\u212Aay@example.org"]) {
    assert.equal(failureReasonOf((await federatedRoundTrip(h, idp, { email, verified: true })).callback), "email_not_confirmed", email);
  }
  assert.ok(sessionCookieOf((await federatedRoundTrip(h, idp, { email: "Kay@Example.org", verified: true })).callback), "ASCII case still folds");
});

test("D27 a link flow finishes only with the session that started it, and not after 'this wasn't me'", async (t) => {
  const { h, cookie } = await member(t);
  const idp = await connectUpstream(h, t);
  const startLink = async (session: string) => {
    const res = await call(h, "POST", "/auth/identities/link/up", session, { password: STRONG_PASSWORD });
    return { authorizationUrl: ok<{ redirect: string }>(res).redirect, flowCookie: setCookieValue(res, "latch_fed")! };
  };
  // Planted in a browser without that session (say, the victim's): refused.
  const planted = await federatedRoundTrip(h, idp, { email: "victim@example.net", verified: true }, { started: await startLink(cookie) });
  assert.equal(failureReasonOf(planted.callback), "no_flow");
  const linked = await federatedRoundTrip(h, idp, { email: "first@example.net", verified: false }, { started: await startLink(cookie), session: cookie });
  assert.equal(linked.callback.headers.location, "/ui/account/identities?notice=identity-linked");
  // A flow held by an intruder across "this wasn't me" is gone with the sessions.
  const held = await startLink(cookie);
  const secure = await secureLinkOf(h, "identity_linked", EMAIL);
  ok(await post(h, "/auth/secure-account", { recordId: secure.recordId, token: secure.token }));
  const late = await federatedRoundTrip(h, idp, { email: "intruder@example.net", verified: false }, { started: held, session: cookie });
  assert.equal(failureReasonOf(late.callback), "no_flow");
  assert.equal((await h.db.selectFrom("federated_identities").selectAll().execute()).length, 0);
});

test("D27 a second-factor step taken before 'this wasn't me' cannot finish after it, whatever the code", async (t) => {
  const { h } = await member(t);
  const idp = await connectUpstream(h, t);
  h.clock.advance(1000);
  const trip = await federatedRoundTrip(h, idp, { email: EMAIL, verified: true });
  const step = setCookieValue(trip.callback, "__Host-latch_fed_pending")!;
  h.clock.advance(1000);
  const session = await signIn(h, EMAIL);
  ok(await post(h, "/auth/federated/link", {}, { headers: { cookie: `session_id=${session}; __Host-latch_fed_pending=${step}` } }));
  const setup = ok<{ secret: string }>(await call(h, "POST", "/auth/2fa/setup", session, { password: STRONG_PASSWORD }));
  ok(await call(h, "POST", "/auth/2fa/enable", session, { code: totpAt(setup.secret, h.clock.now()) }));
  h.clock.advance(30_000);
  const held = await federatedRoundTrip(h, idp, { email: EMAIL, verified: true });
  assert.equal(held.callback.headers.location, "/ui/federated-second-factor");
  const pending = `__Host-latch_fed_pending=${setCookieValue(held.callback, "__Host-latch_fed_pending")}`;
  const secure = await secureLinkOf(h, "identity_linked", EMAIL);
  ok(await post(h, "/auth/secure-account", { recordId: secure.recordId, token: secure.token }));
  for (const code of ["000000", totpAt(setup.secret, h.clock.now())]) {
    const res = await post(h, "/auth/federated/second-factor", { twoFACode: code }, { headers: { cookie: pending } });
    assert.equal(res.statusCode, 400, res.body);
    assert.equal(sessionCookieOf(res), undefined);
  }
});

test("D27 a callback whose state is not the cookie's spends nothing; mix-up: a foreign or missing iss is refused", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const idp = await connectUpstream(h, t);
  const start = await get(h, "/auth/federated/up/start");
  const flowCookie = setCookieValue(start, "latch_fed")!;
  assert.equal(
    failureReasonOf(await get(h, "/auth/federated/up/callback?code=x&state=y", { headers: { cookie: `latch_fed=${flowCookie}` } })),
    "invalid_response",
  );
  const back = await idp.signIn(String(start.headers.location), { email: "x@example.net", verified: true });
  const real = await get(h, `${back.pathname}${back.search}`, { headers: { cookie: `latch_fed=${flowCookie}` } });
  assert.ok(sessionCookieOf(real), "the sign-in in flight still finishes");
  assert.equal(real.headers["referrer-policy"], "no-referrer");
  for (const edit of [(b: URL) => b.searchParams.set("iss", "https://evil.example"), (b: URL) => b.searchParams.delete("iss")]) {
    assert.equal(
      failureReasonOf((await federatedRoundTrip(h, idp, { email: "x@example.net", verified: true }, { editBack: edit })).callback),
      "invalid_response",
    );
  }
});

test("D27 logged URLs mask a callback's code and state whatever their length (GitHub's code is 20 characters)", () => {
  const logged = redactUrl("/auth/federated/gh/callback?code=3584d83530557fdd1f3d&state=abc&iss=https%3A%2F%2Fgithub.com");
  assert.equal(logged, "/auth/federated/gh/callback?code=[redacted]&state=[redacted]&iss=https%3A%2F%2Fgithub.com");
});
