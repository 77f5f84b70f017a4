/**
 * D26 in the hosted pages, without JavaScript (app.inject): the account page links to the passkey
 * page; it lists the member's passkeys, renames and removes them by form; the add form and the
 * login page's "Sign in with a passkey" are rendered hidden (the page script shows them where the
 * browser has WebAuthn) and a post without the script says what is needed.
 * test/e2e/hosted-passkeys.test.ts runs the real ceremony in Chromium with a virtual authenticator.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { PublicKeyCredentialCreationOptionsJSON } from "@simplewebauthn/server";
import { member } from "./support/account.js";
import { storeTenantSettings } from "./support/flows.js";
import { deliverWebhooks, post, STRONG_PASSWORD, type Harness } from "./support/harness.js";
import { assertErrorSummary, assertPage, assertSeeOther, getPage, postForm, signInOnPage } from "./support/ui-forms.js";
import { SoftAuthenticator } from "./support/webauthn-authenticator.js";

const EMAIL = "keys.member@example.org";

/** A member signed in by the login form, on a tenant that sends security alerts. */
function setUp(t: { after(fn: () => Promise<void>): void }): Promise<{ h: Harness; cookie: string }> {
  return member(t, { email: EMAIL, events: false, signIn: signInOnPage });
}

async function addThroughApi(h: Harness, cookie: string, name: string): Promise<void> {
  const options = await post(h, "/auth/passkeys/register/options", { password: STRONG_PASSWORD }, { cookie });
  const response = new SoftAuthenticator().createCredential(options.json<PublicKeyCredentialCreationOptionsJSON>(), `https://${h.tenant.domain}`);
  assert.equal((await post(h, "/auth/passkeys/register/verify", { response, name }, { cookie })).statusCode, 200);
}

test("D26 pages: the passkey page lists, renames and removes passkeys by form; adding needs the script, and says so without it", async (t) => {
  const { h, cookie } = await setUp(t);
  assert.ok(assertPage(await getPage(h, "/ui/account", { cookie })).includes('href="/ui/account/passkeys"'));
  const empty = assertPage(await getPage(h, "/ui/account/passkeys", { cookie }));
  assert.match(empty, /You have no passkeys yet/);
  assert.match(empty, /<div class="passkey-only" hidden><form method="post" action="\/ui\/account\/passkeys" data-latch-form="addPasskey"/);
  assert.match(empty, /<input id="password" name="password" type="password"/, "re-authentication is asked for");
  assert.match(empty, /class="hint passkey-missing">Adding a passkey needs JavaScript/);
  assertErrorSummary(assertPage(await postForm(h, "/ui/account/passkeys", { password: STRONG_PASSWORD }, { cookie }), 400), /needs JavaScript/);

  await addThroughApi(h, cookie, "Laptop <1>");
  const listed = assertPage(await getPage(h, "/ui/account/passkeys", { cookie }));
  assert.match(listed, /<strong id="passkey-0">Laptop &lt;1&gt;<\/strong>/);
  assert.match(listed, /not used yet/);
  const id = /name="id" value="([^"]+)"/.exec(listed)![1]!;

  assertErrorSummary(assertPage(await postForm(h, "/ui/account/passkeys/rename", { id, "name-0": "\u202eevil" }, { cookie }), 400), /1 to 64 characters/);
  assertSeeOther(await postForm(h, "/ui/account/passkeys/rename", { id, "name-0": "Work laptop" }, { cookie }), "/ui/account/passkeys?notice=passkey-renamed");
  assert.match(assertPage(await getPage(h, "/ui/account/passkeys?notice=passkey-renamed", { cookie })), /Work laptop/);
  assertSeeOther(await postForm(h, "/ui/account/passkeys/remove", { id }, { cookie }), "/ui/account/passkeys?notice=passkey-removed");
  assertErrorSummary(assertPage(await postForm(h, "/ui/account/passkeys/remove", { id }, { cookie }), 404), /already been removed/);
  await deliverWebhooks(h);
  // Deliveries go out concurrently, in any order.
  assert.deepEqual(
    h.receiver
      .ofType("security_alert")
      .map((w) => w.body.alert)
      .filter((a) => a!.startsWith("passkey"))
      .sort(),
    ["passkey_added", "passkey_removed"],
  );

  // Signed out: the page sends the member to log in; a foreign origin is refused (D2).
  assertSeeOther(await getPage(h, "/ui/account/passkeys"), "/ui/login?notice=login-required");
  assert.equal((await postForm(h, "/ui/account/passkeys/remove", { id }, { cookie, origin: "https://evil.example" })).statusCode, 403);
});

test("D26 pages: the login page carries a hidden passkey form", async (t) => {
  const { h } = await setUp(t);
  const login = assertPage(await getPage(h, "/ui/login"));
  assert.match(login, /<div class="passkey-only" hidden><h2 id="passkey-title">Or use a passkey<\/h2>/);
  assert.match(login, /data-latch-form="passkeyLogin" aria-labelledby="passkey-title">/);
  assert.match(login, /Sign in with a passkey/);
});

test("hosted-pages.md#one-bot-check: an ALTCHA tenant's login page shows one widget, in the password form; the passkey form takes its answer", async (t) => {
  const { h } = await setUp(t);
  await storeTenantSettings(h, { botProtection: { provider: "altcha" } });
  const login = assertPage(await getPage(h, "/ui/login"));
  assert.equal(login.match(/<altcha-widget/g)?.length, 1, "one bot check on the page");
  const passwordForm = /<form[^>]*data-latch-form="loginWithPassword"[\s\S]*?<\/form>/.exec(login)?.[0] ?? "";
  assert.match(passwordForm, /<altcha-widget challenge="\/auth\/bot-challenge" name="bot-challenge-response"/);
  const passkeyForm = /<form[^>]*data-latch-form="passkeyLogin"[\s\S]*?<\/form>/.exec(login)?.[0] ?? "";
  assert.match(passkeyForm, /Sign in with a passkey/);
  assert.doesNotMatch(passkeyForm, /altcha/);
});
