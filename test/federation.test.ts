/**
 * D27 federated sign-in against a real OpenID provider (panva's oidc-provider as the upstream, on its
 * own server): sign-up by a confirmed email, sign-in by a linked identity, never a link on the email
 * alone, nothing made or matched from an unconfirmed email, locked and 2FA members, the tenant's
 * signup rules, self-service link and unlink, and the attacks of decisions.md#federated-sign-in.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { assertError, ok } from "./support/assertions.js";
import { alerts, call, EMAIL, events, member, secureLinkOf, sendAlertsAndEvents, signIn } from "./support/account.js";
import { lockMember, receiverSettings, registerPending, storeTenantSettings } from "./support/flows.js";
import { createHarness, get, post, registerVerifiedMember, sessionCookieOf, STRONG_PASSWORD, type Harness } from "./support/harness.js";
import { connectUpstream, failureReasonOf, federatedRoundTrip, setCookieValue } from "./support/federation.js";
import { totpAt } from "./support/totp.js";

const NEWCOMER = "grace@example.net";

async function tenantWithUpstream(t: { after(fn: () => Promise<void>): void }, settings: { allowSignup?: boolean; emailDomains?: string[] } = {}) {
  const h = await createHarness();
  t.after(() => h.close());
  await sendAlertsAndEvents(h);
  const idp = await connectUpstream(h, t, settings);
  return { h, idp };
}

async function identitiesOf(h: Harness, cookie: string) {
  return ok<{ identities: Array<{ id: string; connection: string; email: string | null }> }>(await call(h, "GET", "/auth/identities", cookie)).identities;
}

test("D27 sign-up: a confirmed email no member has makes an Unlocked member without a password, signed in, member.created method federated; the same identity signs in again", async (t) => {
  const { h, idp } = await tenantWithUpstream(t);
  const first = await federatedRoundTrip(h, idp, { email: NEWCOMER, verified: true, name: "Grace Hopper" }, { returnTo: "/welcome" });
  assert.match(String(first.start.headers.location), /code_challenge_method=S256/);
  assert.match(String(first.start.headers.location), /nonce=/);
  assert.equal(first.callback.statusCode, 302, first.callback.body);
  assert.equal(first.callback.headers.location, "/welcome");
  const cookie = sessionCookieOf(first.callback)!;
  assert.ok(cookie, "the callback signs the member in");
  const me = ok<{ email: string; name: string; authentication_type: string[]; authentication_status: string; hasPassword: boolean }>(
    await call(h, "GET", "/auth/me", cookie),
  );
  assert.deepEqual(
    [me.email, me.name, me.authentication_type, me.authentication_status, me.hasPassword],
    [NEWCOMER, "Grace Hopper", ["Federated"], "Unlocked", false],
  );
  const created = (await events(h)).filter((e) => e.event_type === "member.created");
  assert.equal(created.length, 1);
  assert.equal(created[0]!.method, "federated");
  assert.equal(created[0]!.connection, "up");
  const [identity] = await identitiesOf(h, cookie);
  assert.equal(identity?.connection, "up");

  const again = await federatedRoundTrip(h, idp, { email: NEWCOMER, verified: true });
  const second = sessionCookieOf(again.callback)!;
  assert.equal(ok<{ email: string }>(await call(h, "GET", "/auth/me", second)).email, NEWCOMER);
  assert.equal((await events(h)).filter((e) => e.event_type === "member.created").length, 1, "no second member");
  const audit = await h.db.selectFrom("audit_events").select("type").where("type", "=", "federated_login").execute();
  assert.equal(audit.length, 2);
  assert.match(await h.deps.metrics.render(), /^latch_logins_total\{method="federated",outcome="success"\} 2$/m, "both sign-ins counted");
});

test("D27 never linked on the email alone: a member's email at the provider asks for the account's proof in this browser; an older session proves nothing; then linked, alerted, and 'this wasn't me' removes it", async (t) => {
  const { h, cookie: oldSession } = await member(t);
  const idp = await connectUpstream(h, t);
  h.clock.advance(1000);
  const trip = await federatedRoundTrip(h, idp, { email: EMAIL, verified: true });
  assert.equal(trip.callback.headers.location, "/ui/federated-link");
  assert.equal(sessionCookieOf(trip.callback), undefined, "no session for the provider's word alone");
  const pending = setCookieValue(trip.callback, "__Host-latch_fed_pending")!;
  assert.equal((await h.db.selectFrom("federated_identities").selectAll().execute()).length, 0);

  const headers = { cookie: `__Host-latch_fed_pending=${pending}` };
  // A session from before the callback (say, a stolen one) is no proof.
  h.clock.advance(1000);
  assertError(
    await post(h, "/auth/federated/link", {}, { cookie: oldSession, headers: { cookie: `session_id=${oldSession}; __Host-latch_fed_pending=${pending}` } }),
    401,
    "unauthorized",
  );
  const fresh = await signIn(h, EMAIL);
  const linked = ok<{ message: string }>(await post(h, "/auth/federated/link", {}, { headers: { cookie: `session_id=${fresh}; ${headers.cookie}` } }));
  assert.match(linked.message, /Upstream/);
  assertError(await post(h, "/auth/federated/link", {}, { headers: { cookie: `session_id=${fresh}; ${headers.cookie}` } }), 400, "federation_failed");
  const alert = (await alerts(h)).find((a) => a.alert === "identity_linked");
  assert.equal(alert?.connection, "Upstream");
  assert.ok((await events(h)).some((e) => e.event_type === "member.updated" && String(e.changes) === "identities"));

  const viaProvider = await federatedRoundTrip(h, idp, { email: EMAIL, verified: true });
  assert.ok(sessionCookieOf(viaProvider.callback), "the linked identity now signs Ada in");

  const secure = await secureLinkOf(h, "identity_linked", EMAIL);
  ok(await post(h, "/auth/secure-account", { recordId: secure.recordId, token: secure.token }));
  assert.equal((await h.db.selectFrom("federated_identities").selectAll().execute()).length, 0, "this wasn't me removed the link");
});

test("D27 no confirmed email: nothing is made or matched, and the page says why", async (t) => {
  const { h } = await member(t);
  const idp = await connectUpstream(h, t);
  for (const email of [NEWCOMER, EMAIL]) {
    const trip = await federatedRoundTrip(h, idp, { email, verified: false });
    assert.equal(failureReasonOf(trip.callback), "email_not_confirmed");
    assert.equal(setCookieValue(trip.callback, "__Host-latch_fed_pending"), undefined);
  }
  assert.equal((await h.db.selectFrom("members").select("id").execute()).length, 1);
  assert.equal((await h.db.selectFrom("federation_pending").selectAll().execute()).length, 0);
  assert.match(
    await h.deps.metrics.render(),
    /^latch_logins_total\{method="federated",outcome="email_not_confirmed"\} 2$/m,
    "a refusal is counted by its reason",
  );
});

test("D27 signup rules: allowSignup false refuses a newcomer; emailDomains refuses another domain", async (t) => {
  const closed = await tenantWithUpstream(t, { allowSignup: false });
  assert.equal(failureReasonOf((await federatedRoundTrip(closed.h, closed.idp, { email: NEWCOMER, verified: true })).callback), "signup_closed");
  const domains = await tenantWithUpstream(t, { emailDomains: ["example.com"] });
  assert.equal(failureReasonOf((await federatedRoundTrip(domains.h, domains.idp, { email: NEWCOMER, verified: true })).callback), "domain_not_allowed");
  assert.ok(sessionCookieOf((await federatedRoundTrip(domains.h, domains.idp, { email: "kim@example.com", verified: true })).callback));
});

test("D27 a linked member who is locked is refused; one with 2FA gets the second step, where a wrong code leaves the step and the right one signs in", async (t) => {
  const { h, idp } = await tenantWithUpstream(t);
  const made = await federatedRoundTrip(h, idp, { email: NEWCOMER, verified: true });
  const cookie = sessionCookieOf(made.callback)!;
  const recordId = ok<{ recordid: string }>(await call(h, "GET", "/auth/me", cookie)).recordid;

  // 2FA: a member without a password enrols with a fresh session (D24).
  const setup = ok<{ secret: string }>(await call(h, "POST", "/auth/2fa/setup", cookie, {}));
  ok(await call(h, "POST", "/auth/2fa/enable", cookie, { code: totpAt(setup.secret, h.clock.now()) }));
  h.clock.advance(30_000);
  const trip = await federatedRoundTrip(h, idp, { email: NEWCOMER, verified: true });
  assert.equal(trip.callback.headers.location, "/ui/federated-second-factor");
  assert.equal(sessionCookieOf(trip.callback), undefined);
  const pending = `__Host-latch_fed_pending=${setCookieValue(trip.callback, "__Host-latch_fed_pending")}`;
  assertError(await post(h, "/auth/federated/second-factor", { twoFACode: "000000" }, { headers: { cookie: pending } }), 401, "invalid_2fa_code");
  const done = await post(h, "/auth/federated/second-factor", { twoFACode: totpAt(setup.secret, h.clock.now()) }, { headers: { cookie: pending } });
  assert.equal(done.statusCode, 200, done.body);
  assert.ok(sessionCookieOf(done));
  assertError(
    await post(h, "/auth/federated/second-factor", { twoFACode: totpAt(setup.secret, h.clock.now()) }, { headers: { cookie: pending } }),
    400,
    "federation_failed",
  );

  await lockMember(h, recordId);
  assert.equal(failureReasonOf((await federatedRoundTrip(h, idp, { email: NEWCOMER, verified: true })).callback), "account_locked");
});

test("D27 self-service: link another identity after re-authentication, list it, refuse one that is someone else's, unlink it with an alert", async (t) => {
  const { h, cookie } = await member(t);
  const idp = await connectUpstream(h, t);
  assertError(await call(h, "POST", "/auth/identities/link/up", cookie, {}), 400, "validation_failed");
  const res = await call(h, "POST", "/auth/identities/link/up", cookie, { password: STRONG_PASSWORD });
  const started = ok<{ redirect: string }>(res);
  assert.ok(started.redirect.startsWith(idp.issuer));
  // The answer set the flow cookie; the browser carries it to the callback.
  const flowCookie = setCookieValue(res, "latch_fed")!;
  const trip = await federatedRoundTrip(
    h,
    idp,
    { email: "ada.elsewhere@example.com", verified: false },
    { started: { authorizationUrl: started.redirect, flowCookie }, session: cookie },
  );
  assert.equal(trip.callback.headers.location, "/ui/account/identities?notice=identity-linked");
  const [identity] = await identitiesOf(h, cookie);
  assert.equal(identity?.email, "ada.elsewhere@example.com");
  assert.ok((await alerts(h)).some((a) => a.alert === "identity_linked"));

  // The same identity, started by another member, is refused.
  await registerVerifiedMember(h, "bob@example.org");
  const other = await signIn(h, "bob@example.org");
  const theirs = await call(h, "POST", "/auth/identities/link/up", other, { password: STRONG_PASSWORD });
  const refused = await federatedRoundTrip(
    h,
    idp,
    { email: "ada.elsewhere@example.com", verified: false },
    { started: { authorizationUrl: theirs.json<{ redirect: string }>().redirect, flowCookie: setCookieValue(theirs, "latch_fed")! }, session: other },
  );
  assert.equal(failureReasonOf(refused.callback), "identity_in_use");

  assertError(await call(h, "DELETE", `/auth/identities/${identity.id}`, cookie, { password: "wrong-password-123" }), 401, "invalid_credentials");
  ok(await call(h, "DELETE", `/auth/identities/${identity.id}`, cookie, { password: STRONG_PASSWORD }));
  assert.deepEqual(await identitiesOf(h, cookie), []);
  assert.ok((await alerts(h)).some((a) => a.alert === "identity_unlinked"));
  assertError(await call(h, "DELETE", `/auth/identities/${identity.id}`, cookie, { password: STRONG_PASSWORD }), 404, "not_found");
});

test("D27 attacks on the callback: a changed state, no cookie, a replayed callback, a provider's refusal; each lands on the error page with no session", async (t) => {
  const { h, idp } = await tenantWithUpstream(t);
  const person = { email: NEWCOMER, verified: true };
  const changed = await federatedRoundTrip(h, idp, person, { editBack: (back) => back.searchParams.set("state", "forged-state") });
  assert.equal(failureReasonOf(changed.callback), "invalid_response");
  const noCookie = await federatedRoundTrip(h, idp, person, { flowCookie: null });
  assert.equal(failureReasonOf(noCookie.callback), "no_flow");
  const good = await federatedRoundTrip(h, idp, person);
  assert.ok(sessionCookieOf(good.callback));
  const calls = idp.tokenCalls;
  const replay = await get(h, `${good.back.pathname}${good.back.search}`, { headers: { cookie: `latch_fed=${good.flowCookie}` } });
  assert.equal(failureReasonOf(replay), "no_flow");
  assert.equal(idp.tokenCalls, calls, "a replayed callback never reaches the token endpoint");
  idp.denyNextSignIn();
  const denied = await federatedRoundTrip(h, idp, person);
  assert.equal(failureReasonOf(denied.callback), "provider_error");
  for (const trip of [changed, noCookie, replay, denied]) assert.equal(sessionCookieOf("callback" in trip ? trip.callback : trip), undefined);
});

test("D27 attacks on the ID token: wrong aud, wrong nonce, expired, signed by another key, unsigned, another issuer; none signs anyone in", async (t) => {
  const { h, idp } = await tenantWithUpstream(t);
  const now = Math.floor(Date.now() / 1000);
  const tampers = {
    aud: { payload: (p: Record<string, unknown>) => ({ ...p, aud: "someone-else" }) },
    nonce: { payload: (p: Record<string, unknown>) => ({ ...p, nonce: "replayed-nonce" }) },
    exp: { payload: (p: Record<string, unknown>) => ({ ...p, iat: now - 7200, exp: now - 3600 }) },
    iss: { payload: (p: Record<string, unknown>) => ({ ...p, iss: "https://evil.example" }) },
    foreignKey: { signWith: "foreign" as const },
    unsigned: { signWith: "none" as const },
  };
  for (const [name, tamper] of Object.entries(tampers)) {
    idp.tamper = tamper;
    const trip = await federatedRoundTrip(h, idp, { email: NEWCOMER, verified: true });
    assert.equal(failureReasonOf(trip.callback), "invalid_response", name);
    assert.equal(sessionCookieOf(trip.callback), undefined, name);
  }
  idp.tamper = undefined;
  assert.equal((await h.db.selectFrom("members").select("id").execute()).length, 0);
});

test("D27 returnTo must be a path on the tenant's site; an unknown connection is 404; nothing secret reaches the logs", async (t) => {
  const { h, idp } = await tenantWithUpstream(t);
  for (const returnTo of ["https://evil.example/", "//evil.example/x", "/\\evil.example"]) {
    assertError(await get(h, `/auth/federated/up/start?returnTo=${encodeURIComponent(returnTo)}`), 400, "validation_failed");
  }
  assertError(await get(h, "/auth/federated/nope/start"), 404, "not_found");
  const trip = await federatedRoundTrip(h, idp, { email: NEWCOMER, verified: true });
  const code = trip.back.searchParams.get("code")!;
  const logs = h.logs.join("\n");
  for (const secret of [code, trip.flowCookie, idp.client.client_secret, sessionCookieOf(trip.callback)!])
    assert.ok(!logs.includes(secret), "a secret in the logs");
});

test("D27 a pending account with the provider's confirmed email: its unproven registration is erased and the person signs up; with sign-up closed it is refused", async (t) => {
  const { h, idp } = await tenantWithUpstream(t);
  await storeTenantSettings(h, receiverSettings(h));
  const pending = await registerPending(h, NEWCOMER);
  const trip = await federatedRoundTrip(h, idp, { email: NEWCOMER, verified: true });
  const me = ok<{ recordid: string; authentication_status: string }>(await call(h, "GET", "/auth/me", sessionCookieOf(trip.callback)));
  assert.notEqual(me.recordid, pending.recordId);
  assert.equal(me.authentication_status, "Unlocked");
  assertError(await post(h, "/auth/verify-email", { recordId: pending.recordId, token: pending.token }), 400, "invalid_token");

  const closed = await tenantWithUpstream(t, { allowSignup: false });
  await storeTenantSettings(closed.h, receiverSettings(closed.h));
  await registerPending(closed.h, NEWCOMER);
  assert.equal(failureReasonOf((await federatedRoundTrip(closed.h, closed.idp, { email: NEWCOMER, verified: true })).callback), "account_pending");
});
