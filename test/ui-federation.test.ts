/**
 * Federated sign-in in the hosted pages (decisions.md#federated-sign-in), without JavaScript
 * (app.inject), against a real upstream (panva's oidc-provider, test/support/upstream-idp.ts): the
 * "Continue with" links, the error page of every reason, the second-factor step, the proof before a
 * link, and the member's linked accounts (link through the provider, unlink).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { call, EMAIL, member } from "./support/account.js";
import { connectUpstream, federatedRoundTrip, setCookieValue } from "./support/federation.js";
import { createHarness, sessionCookieOf, STRONG_PASSWORD } from "./support/harness.js";
import { nextIp, WRONG_PASSWORD } from "./support/flows.js";
import { totpAt } from "./support/totp.js";
import { assertErrorSummary, assertPage, assertSeeOther, getPage, postForm } from "./support/ui-forms.js";
import { ok } from "./support/assertions.js";

const NEWCOMER = "grace@example.net";
const LINK_TO_LOGIN = "/ui/login?returnTo=%2Fui%2Ffederated-link";

function unescapeHtml(value: string): string {
  return value
    .replace(/&amp;/g, "&")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">");
}

test("D27 pages: 'Continue with' links on login and register, one per connection, carrying a valid returnTo; none without connections", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  for (const url of ["/ui/login", "/ui/register"]) assert.doesNotMatch(assertPage(await getPage(h, url)), /Or continue with|\/auth\/federated\//, url);

  await connectUpstream(h, t);
  for (const url of ["/ui/login", "/ui/register"]) {
    const body = assertPage(await getPage(h, url));
    assert.match(body, /<section aria-labelledby="federated-title">\n<h2 id="federated-title">Or continue with<\/h2>/, url);
    assert.match(body, /<a class="button" href="\/auth\/federated\/up\/start">Continue with Upstream<\/a>/, url);
  }
  const back = assertPage(await getPage(h, "/ui/login?returnTo=/ui/federated-link"));
  assert.ok(back.includes(`href="/auth/federated/up/start?returnTo=%2Fui%2Ffederated-link"`));
  assert.ok(back.includes(`action="${LINK_TO_LOGIN}"`), "the password form comes back too");
  for (const evil of ["//evil.example/x", "https://evil.example/", "/\\evil.example"]) {
    const body = assertPage(await getPage(h, `/ui/login?returnTo=${encodeURIComponent(evil)}`));
    assert.ok(body.includes(`href="/auth/federated/up/start">`) && body.includes(`action="/ui/login"`), evil);
  }
  // The link is what a browser follows: the start answers with the provider.
  const start = await getPage(h, "/auth/federated/up/start?returnTo=%2Fui%2Ffederated-link");
  assert.equal(start.statusCode, 302, start.body);
  assert.ok(setCookieValue(start, "latch_fed"));
});

test("D27 pages: the error page words every reason with a next step, and never shows the query", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const texts: Record<string, RegExp> = {
    no_flow: /expired or was already used: start again/,
    provider_error: /provider did not sign you in/,
    provider_unreachable: /could not reach the provider/,
    invalid_response: /answer could not be verified/,
    email_not_confirmed: /provider did not confirm your email address/,
    signup_closed: /does not make new accounts from it/,
    domain_not_allowed: /only for some email domains/,
    account_locked: /account is locked/,
    account_pending: /not confirmed yet[\s\S]*href="\/ui\/resend-verification"/,
    identity_in_use: /already linked to another account[\s\S]*href="\/ui\/account\/identities"/,
    try_again: /Something changed while you were signing in/,
  };
  const seen = new Set<string>();
  for (const [reason, text] of Object.entries(texts)) {
    const body = assertPage(await getPage(h, `/ui/federated-error?code=federation_failed&reason=${reason}`));
    assert.match(body, text, reason);
    assert.match(body, /<h1>Sign-in did not work<\/h1>/, reason);
    assert.match(body, /href="\/ui\/(login|resend-verification|account\/identities)"/, `${reason}: a next step`);
    const paragraph = /<p>([^<]+)<\/p>/.exec(body.slice(body.indexOf("<h1>")))![1]!;
    assert.ok(!seen.has(paragraph), `${reason} has its own words`);
    seen.add(paragraph);
  }
  for (const reason of ["<script>alert(1)</script>", "constructor", "__proto__", ""]) {
    const body = assertPage(await getPage(h, `/ui/federated-error?code=%3Cb%3E&reason=${encodeURIComponent(reason)}`));
    assert.match(body, /did not work\. Please start again from the sign-in page/, reason);
    assert.ok(!body.includes("<script>alert") && !body.includes("&lt;script") && !body.includes("<b>") && !/function|native code/.test(body), reason);
  }
});

test("D27 pages: the second-factor step signs a 2FA member in, refuses a wrong code in the form, and is gone once used", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const idp = await connectUpstream(h, t);
  const made = await federatedRoundTrip(h, idp, { email: NEWCOMER, verified: true });
  const cookie = sessionCookieOf(made.callback)!;
  const setup = ok<{ secret: string }>(await call(h, "POST", "/auth/2fa/setup", cookie, {}));
  ok(await call(h, "POST", "/auth/2fa/enable", cookie, { code: totpAt(setup.secret, h.clock.now()) }));
  h.clock.advance(30_000);

  assert.match(assertPage(await getPage(h, "/ui/federated-second-factor"), 400), /expired or was already used/);
  const trip = await federatedRoundTrip(h, idp, { email: NEWCOMER, verified: true }, { returnTo: "/welcome" });
  assert.equal(trip.callback.headers.location, "/ui/federated-second-factor");
  const cookies = { "__Host-latch_fed_pending": setCookieValue(trip.callback, "__Host-latch_fed_pending")! };
  const form = assertPage(await getPage(h, "/ui/federated-second-factor", { cookies }));
  assert.match(form, /<form method="post" action="\/ui\/federated-second-factor"/);
  assert.match(form, /<label for="twoFACode">Authentication code<\/label>/);

  assertErrorSummary(assertPage(await postForm(h, "/ui/federated-second-factor", { twoFACode: "" }, { cookies }), 400), /Enter the code/);
  const wrong = assertPage(await postForm(h, "/ui/federated-second-factor", { twoFACode: "000000" }, { cookies }), 401);
  assert.match(wrong, /aria-invalid="true"/);
  assert.match(wrong, /action="\/ui\/federated-second-factor"/, "the form again, for another try");
  const done = await postForm(h, "/ui/federated-second-factor", { twoFACode: totpAt(setup.secret, h.clock.now()) }, { cookies });
  assertSeeOther(done, "/welcome");
  const session = sessionCookieOf(done)!;
  assert.equal(ok<{ email: string }>(await call(h, "GET", "/auth/me", session)).email, NEWCOMER);
  assert.equal(setCookieValue(done, "__Host-latch_fed_pending"), "", "the step's cookie is cleared");
  const used = assertPage(await postForm(h, "/ui/federated-second-factor", { twoFACode: totpAt(setup.secret, h.clock.now()) }, { cookies }), 400);
  assert.match(used, /expired or was already used/);
  assert.doesNotMatch(used, /name="twoFACode"/, "no form for a step that is gone");
});

test("D27 pages: the link page links only after a sign-in in this browser after the callback, by the login page's returnTo", async (t) => {
  const { h, cookie: oldSession } = await member(t);
  const idp = await connectUpstream(h, t);
  h.clock.advance(1000);
  const trip = await federatedRoundTrip(h, idp, { email: EMAIL, verified: true });
  assert.equal(trip.callback.headers.location, "/ui/federated-link");
  const cookies = { "__Host-latch_fed_pending": setCookieValue(trip.callback, "__Host-latch_fed_pending")! };
  h.clock.advance(1000);

  const ask = assertPage(await getPage(h, "/ui/federated-link", { cookies }));
  assert.match(ask, /An account with <strong>ada@example\.org<\/strong> already exists\. Sign in to it to link your Upstream account\./);
  assert.ok(ask.includes(`href="${LINK_TO_LOGIN}"`));
  assert.doesNotMatch(ask, /Link Upstream<\/button>/, "no button without a session");
  assertSeeOther(await postForm(h, "/ui/federated-link", {}, { cookies }), LINK_TO_LOGIN);

  // A session from before the callback proves nothing: refused, and the page asks for a sign-in.
  const refused = assertPage(await postForm(h, "/ui/federated-link", {}, { cookie: oldSession, cookies }), 401);
  assertErrorSummary(refused, /Sign in to the account with this email address first/);
  assert.ok(refused.includes(`href="${LINK_TO_LOGIN}"`));
  assert.equal((await h.db.selectFrom("federated_identities").selectAll().execute()).length, 0);

  const signedIn = await postForm(h, LINK_TO_LOGIN, { email: EMAIL, password: STRONG_PASSWORD }, { ip: nextIp(), cookies });
  assertSeeOther(signedIn, "/ui/federated-link");
  const fresh = sessionCookieOf(signedIn)!;
  const confirm = assertPage(await getPage(h, "/ui/federated-link", { cookie: fresh, cookies }));
  assert.match(confirm, /<button type="submit">Link Upstream<\/button>/);
  const linked = await postForm(h, "/ui/federated-link", {}, { cookie: fresh, cookies });
  assertSeeOther(linked, "/ui/account/identities?notice=identity-linked");
  assert.equal(setCookieValue(linked, "__Host-latch_fed_pending"), "");
  const list = assertPage(await getPage(h, "/ui/account/identities?notice=identity-linked", { cookie: fresh }));
  assert.match(list, /<p class="notice" role="status">The account is linked\./);
  assert.match(list, /<strong>Upstream<\/strong>/);
  assert.match(assertPage(await getPage(h, "/ui/federated-link", { cookie: fresh, cookies }), 400), /expired or was already used/);
});

test("D27 pages: linked accounts are listed; linking re-authenticates and sends the browser to the provider with latch_fed; unlinking re-authenticates", async (t) => {
  const { h, cookie } = await member(t);
  assert.doesNotMatch(assertPage(await getPage(h, "/ui/account", { cookie })), /\/ui\/account\/identities/, "no link without providers");
  const idp = await connectUpstream(h, t);
  assert.match(assertPage(await getPage(h, "/ui/account", { cookie })), /href="\/ui\/account\/identities"/);
  assertSeeOther(await getPage(h, "/ui/account/identities"), "/ui/login?notice=login-required");
  const empty = assertPage(await getPage(h, "/ui/account/identities", { cookie }));
  assert.match(empty, /No account at another provider is linked/);
  assert.match(empty, /<a class="button" href="\/ui\/account\/identities\/link\?connection=up">Link Upstream<\/a>/);

  const ask = assertPage(await getPage(h, "/ui/account/identities/link?connection=up", { cookie }));
  assert.match(ask, /<input id="password" name="password" type="password" autocomplete="current-password"/);
  assertPage(await getPage(h, "/ui/account/identities/link?connection=nope", { cookie }), 404);
  assertErrorSummary(assertPage(await postForm(h, "/ui/account/identities/link", { connection: "up" }, { cookie }), 400), /Enter your password/);
  const wrong = await postForm(h, "/ui/account/identities/link", { connection: "up", password: WRONG_PASSWORD }, { cookie });
  assertErrorSummary(assertPage(wrong, 401), /password is incorrect/);
  assert.equal(setCookieValue(wrong, "latch_fed"), undefined);

  const go = await postForm(h, "/ui/account/identities/link", { connection: "up", password: STRONG_PASSWORD }, { cookie });
  const body = assertPage(go);
  const flowCookie = setCookieValue(go, "latch_fed")!;
  assert.ok(flowCookie, "the flow cookie is set");
  assert.match(String(go.headers["set-cookie"]), /latch_fed=[^;]+; Max-Age=600; Path=\/auth\/federated; HttpOnly; Secure; SameSite=Lax/);
  const refresh = /^0; url=(.+)$/.exec(String(go.headers.refresh))?.[1] ?? "";
  assert.ok(refresh.startsWith(idp.issuer), "the browser goes on to the provider");
  assert.ok(body.includes(`href="${refresh.replaceAll("&", "&amp;")}">Continue to Upstream</a>`));
  const trip = await federatedRoundTrip(
    h,
    idp,
    { email: "ada.elsewhere@example.com", verified: false },
    { started: { authorizationUrl: refresh, flowCookie }, session: cookie },
  );
  assert.equal(trip.callback.headers.location, "/ui/account/identities?notice=identity-linked");
  const list = assertPage(await getPage(h, "/ui/account/identities?notice=identity-linked", { cookie }));
  assert.match(list, /The account is linked\./);
  assert.match(list, /ada\.elsewhere@example\.com\. Linked <time datetime="/);
  const unlinkPath = unescapeHtml(/href="(\/ui\/account\/identities\/unlink\?id=[^"]+)"/.exec(list)![1]!);
  const id = new URL(unlinkPath, "https://x.invalid").searchParams.get("id")!;

  assert.match(assertPage(await getPage(h, unlinkPath, { cookie })), /<button type="submit" class="danger">Unlink Upstream<\/button>/);
  assertErrorSummary(assertPage(await postForm(h, "/ui/account/identities/unlink", { id, password: WRONG_PASSWORD }, { cookie }), 401), /incorrect/);
  assertSeeOther(
    await postForm(h, "/ui/account/identities/unlink", { id, password: STRONG_PASSWORD }, { cookie }),
    "/ui/account/identities?notice=identity-unlinked",
  );
  assert.match(assertPage(await getPage(h, "/ui/account/identities?notice=identity-unlinked", { cookie })), /No account at another provider is linked/);
  assertPage(await postForm(h, "/ui/account/identities/unlink", { id, password: STRONG_PASSWORD }, { cookie }), 404);
});
