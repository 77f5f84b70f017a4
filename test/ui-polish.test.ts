/**
 * Issue 34's polish on the hosted pages, without JavaScript (app.inject), on SQLite and PostgreSQL:
 * the login page fills in the address the member just confirmed (hosted-pages.md#login-email-after-verification),
 * every page knows whether its reader is signed in (hosted-pages.md#signed-in-state), and each
 * passkey's rename form sits behind its own "Rename" disclosure (hosted-pages.md#passkey-rename).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import type { PublicKeyCredentialCreationOptionsJSON } from "@simplewebauthn/server";
import { member } from "./support/account.js";
import { lastWebhookFor, nextIp } from "./support/flows.js";
import { createHarness, deliverWebhooks, post, STRONG_PASSWORD, type Harness } from "./support/harness.js";
import { assertErrorSummary, assertPage, assertSeeOther, getPage, inputValue, postForm, signInOnPage } from "./support/ui-forms.js";
import { SoftAuthenticator } from "./support/webauthn-authenticator.js";

async function verificationPath(h: Harness, email: string): Promise<string> {
  await deliverWebhooks(h);
  return new URL(lastWebhookFor(h, "verify_email", email).body.verificationLink!).pathname;
}

function rememberedCookie(res: LightMyRequestResponse) {
  const cookie = res.cookies.find((c) => c.name === "login_email");
  assert.ok(cookie, "the confirmation remembers the address for the next page");
  return cookie;
}

/** The main navigation's links, by their text. */
function navigationOf(body: string): string[] {
  const nav = /<nav aria-label="Main"><ul>([\s\S]*?)<\/ul><\/nav>/.exec(body)?.[1] ?? "";
  return [...nav.matchAll(/<a href="[^"]*">([^<]*)<\/a>/g)].map((m) => m[1]!);
}

test("after confirming the address, the next page fills it in from the cookie the confirmation set, never from the URL", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const email = "verified.first@example.org";
  assertSeeOther(
    await postForm(h, "/ui/register", { name: "First Login", email, password: STRONG_PASSWORD }, { ip: nextIp() }),
    "/ui/check-email?for=registration",
  );
  const link = await verificationPath(h, email);
  assert.equal(inputValue(assertPage(await getPage(h, "/ui/login?notice=email-verified")), "email"), undefined, "nothing before the confirmation");

  const confirmed = await postForm(h, link, {});
  assertSeeOther(confirmed, "/ui/login?notice=email-verified");
  const cookie = rememberedCookie(confirmed);
  assert.equal(cookie.value, email);
  assert.equal(cookie.path, "/ui/login", "sent to the login page only");
  assert.equal(cookie.httpOnly, true);
  assert.equal(cookie.secure, true);
  assert.equal(cookie.sameSite, "Strict");
  assert.ok(cookie.maxAge !== undefined && cookie.maxAge > 0 && cookie.maxAge <= 15 * 60, `short-lived (${cookie.maxAge} s)`);

  const login = assertPage(await getPage(h, "/ui/login?notice=email-verified", { cookies: { login_email: email } }));
  assert.equal(inputValue(login, "email"), email);
  assert.match(login, /Your email address is verified/);
  // Not from the URL, which anyone can craft, and not on a later visit to the login page.
  assert.equal(inputValue(assertPage(await getPage(h, "/ui/login?notice=email-verified&email=mallory%40example.org")), "email"), undefined);
  assert.equal(inputValue(assertPage(await getPage(h, "/ui/login", { cookies: { login_email: email } })), "email"), undefined);
});

test("an email-only member's confirmation fills in the login-link page, where such a member goes next", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const email = "link.only.first@example.org";
  assertSeeOther(await postForm(h, "/ui/register-email-only", { name: "Link Only", email }, { ip: nextIp() }), "/ui/check-email?for=registration");
  const confirmed = await postForm(h, await verificationPath(h, email), { password: "" });
  assertSeeOther(confirmed, "/ui/magic-link?notice=email-verified-no-password");
  const cookie = rememberedCookie(confirmed);
  assert.equal(cookie.path, "/ui/magic-link");
  const page = assertPage(await getPage(h, "/ui/magic-link?notice=email-verified-no-password", { cookies: { login_email: cookie.value } }));
  assert.equal(inputValue(page, "email"), email);
});

test("every page knows its reader is signed in: after an email change and on the login page, the menu is the member's", async (t) => {
  const { h, cookie } = await member(t, { email: "signed.in@example.org", events: false, signIn: signInOnPage });
  const memberMenu = ["Account", "Password", "Two-factor authentication"];
  const visitorMenu = ["Log in", "Register", "Email me a login link"];
  for (const path of ["/ui/check-email?for=email-change", "/ui/login", "/ui/register", "/ui/forgot-password", "/ui/account"]) {
    assert.deepEqual(navigationOf(assertPage(await getPage(h, path, { cookie }))), memberMenu, `${path} with a session`);
  }
  const afterChange = assertPage(await getPage(h, "/ui/check-email?for=email-change", { cookie }));
  assert.match(afterChange, /<a href="\/ui\/account">Back to your account<\/a>/, "the way back is the account, not the login page");
  assert.doesNotMatch(afterChange, /Back to log in/);
  const signedOut = assertPage(await getPage(h, "/ui/check-email?for=email-change"));
  assert.deepEqual(navigationOf(signedOut), visitorMenu, "without a session");
  assert.match(signedOut, /Back to log in/);
  assert.deepEqual(navigationOf(assertPage(await getPage(h, "/ui/login", { cookie: "not-a-session" }))), visitorMenu, "with a dead session cookie");
  assertSeeOther(await postForm(h, "/ui/logout", {}, { cookie }), "/ui/login?notice=logged-out");
  assert.deepEqual(navigationOf(assertPage(await getPage(h, "/ui/login", { cookie }))), visitorMenu, "after logging out");
});

test("a signed-in page reads its session once: the menu's check and the page's own are one store read", async (t) => {
  const { h, cookie } = await member(t, { email: "one.read@example.org", events: false, signIn: signInOnPage });
  const sessions = h.deps.store.sessions;
  const find = sessions.findLiveSession.bind(sessions);
  let reads = 0;
  sessions.findLiveSession = (...args: Parameters<typeof find>) => {
    reads++;
    return find(...args);
  };
  t.after(() => {
    sessions.findLiveSession = find;
  });
  for (const path of ["/ui/account", "/ui/account/sessions", "/ui/account/profile"]) {
    reads = 0;
    assert.deepEqual(navigationOf(assertPage(await getPage(h, path, { cookie }))), ["Account", "Password", "Two-factor authentication"], path);
    assert.equal(reads, 1, `${path}: one session read`);
  }
  reads = 0;
  assertPage(await getPage(h, "/ui/login"));
  assert.equal(reads, 0, "no session cookie: no read");
});

test("each passkey's rename form is behind its own closed Rename disclosure, open after its name was refused", async (t) => {
  const { h, cookie } = await member(t, { email: "rename.keys@example.org", events: false, signIn: signInOnPage });
  for (const name of ["Laptop", "Phone"]) {
    const options = await post(h, "/auth/passkeys/register/options", { password: STRONG_PASSWORD }, { cookie });
    const response = new SoftAuthenticator().createCredential(options.json<PublicKeyCredentialCreationOptionsJSON>(), `https://${h.tenant.domain}`);
    assert.equal((await post(h, "/auth/passkeys/register/verify", { response, name }, { cookie })).statusCode, 200);
  }
  const listed = assertPage(await getPage(h, "/ui/account/passkeys", { cookie }));
  const disclosures = [...listed.matchAll(/<details class="rename"( open)?>\n<summary id="rename-\d" aria-label="Rename ([^"]+)">Rename<\/summary>/g)];
  assert.deepEqual(
    disclosures.map((d) => [d[2], d[1] ?? "closed"]),
    [
      ["Laptop", "closed"],
      ["Phone", "closed"],
    ],
  );
  assert.equal(listed.match(/<input id="name-\d"/g)?.length, 2, "the rename fields are in the page, so the disclosure works without JavaScript");
  const second = [...listed.matchAll(/name="id" value="([^"]+)"/g)][1]![1]!;

  const refused = assertPage(await postForm(h, "/ui/account/passkeys/rename", { id: second, "name-1": "\u202eevil" }, { cookie }), 400);
  assertErrorSummary(refused, /1 to 64 characters/);
  assert.deepEqual(
    [...refused.matchAll(/<details class="rename"( open)?>/g)].map((d) => d[1] ?? "closed"),
    ["closed", " open"],
    "the refused one is open, so its error and field show",
  );
  assertSeeOther(
    await postForm(h, "/ui/account/passkeys/rename", { id: second, "name-1": "Work phone" }, { cookie }),
    "/ui/account/passkeys?notice=passkey-renamed",
  );
});

test("an unknown page under /ui/ leads on to the sign-in pages instead of ending there", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const missing = assertPage(await getPage(h, "/ui/acount"), 404);
  assert.match(missing, /<h1>Page not found<\/h1>/);
  assert.match(missing, /<a href="\/ui\/">Go to the sign-in pages<\/a>/);
});
