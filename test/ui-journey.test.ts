/**
 * A member's whole life on the hosted pages without JavaScript, for a tenant with bot provider
 * `none`: every step is a plain form post to the page, answered by a 303 or the page again. Codes
 * come from test/support/totp.ts; links from the delivered webhooks.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { SECOND } from "../src/core/clock.js";
import { createHarness, deliverWebhooks, parseLink, sessionCookieOf, STRONG_PASSWORD, OTHER_STRONG_PASSWORD, type Harness } from "./support/harness.js";
import { lastWebhookFor, nextIp, sessionData, sessionStatus } from "./support/flows.js";
import { totpAt } from "./support/totp.js";
import { assertErrorSummary, assertPage, assertSeeOther, getPage, inputValue, postForm } from "./support/ui-forms.js";

let h: Harness;
before(async () => {
  h = await createHarness({ settings: { loginSuccessRedirect: "/ui/account" } });
});
after(() => h.close());

async function linkFor(eventType: string, field: string, email: string): Promise<{ recordId: string; token: string; path: string }> {
  await deliverWebhooks(h);
  const link = lastWebhookFor(h, eventType, email).body[field]!;
  const { recordId, token } = parseLink(link);
  return { recordId, token, path: new URL(link).pathname };
}

test("register, verify, log in, change password, enrol 2FA, log out, log in with a code, magic link with a code, reset", async () => {
  const email = "journey@example.org";
  assertSeeOther(
    await postForm(h, "/ui/register", { name: "Journey Member", email, password: STRONG_PASSWORD }, { ip: nextIp() }),
    "/ui/check-email?for=registration",
  );
  assertPage(await getPage(h, "/ui/check-email?for=registration"));

  // The emailed link opens the page at its root path (no /ui); its button posts to that same URL.
  const verification = await linkFor("verify_email", "verificationLink", email);
  assert.match(verification.path, /^\/email-verified\//);
  const page = assertPage(await getPage(h, verification.path));
  assert.match(page, /<form method="post" data-latch-form="verifyEmail">/, "the token page's form has no action: it posts to its own URL");
  assert.match(page, /<button type="submit">Confirm email address<\/button>/);
  assertSeeOther(await postForm(h, verification.path, {}), "/ui/login?notice=email-verified");
  const again = assertPage(await postForm(h, verification.path, {}), 400);
  assertErrorSummary(again, /invalid or has expired/);

  let login = await postForm(h, "/ui/login", { email, password: STRONG_PASSWORD }, { ip: nextIp() });
  assertSeeOther(login, "/ui/account");
  let cookie = sessionCookieOf(login)!;
  const account = assertPage(await getPage(h, "/ui/account", { cookie }));
  const { recordId } = await sessionData(h, cookie);
  assert.ok(account.includes(`<dd>${String(recordId)}</dd>`), "the account page shows the member id");
  assert.match(account, /<dt>Two-factor authentication<\/dt><dd>Off<\/dd>/);

  const wrongCurrent = assertPage(
    await postForm(h, "/ui/change-password", { currentPassword: "Not-The-Pass-1", newPassword: OTHER_STRONG_PASSWORD }, { cookie }),
    401,
  );
  assertErrorSummary(wrongCurrent, /href="#currentPassword"/);
  assertSeeOther(
    await postForm(h, "/ui/change-password", { currentPassword: STRONG_PASSWORD, newPassword: OTHER_STRONG_PASSWORD }, { cookie }),
    "/ui/account?notice=password-changed",
  );
  assert.match(assertPage(await getPage(h, "/ui/account?notice=password-changed", { cookie })), /role="status">Your password has been changed\./);

  // 2FA: setup shows the QR code and the secret, the first code turns it on, codes are shown once.
  // D30: turning it on re-authenticates; the page asks for the password at this first step.
  assertErrorSummary(assertPage(await postForm(h, "/ui/two-factor/setup", {}, { cookie }), 400), /href="#password"/);
  assertErrorSummary(assertPage(await postForm(h, "/ui/two-factor/setup", { password: STRONG_PASSWORD }, { cookie }), 401), /href="#password"/);
  // hosted-pages.md#two-factor-setup-by-get: post, redirect, get.
  assertSeeOther(await postForm(h, "/ui/two-factor/setup", { password: OTHER_STRONG_PASSWORD }, { cookie }), "/ui/two-factor/setup");
  const setup = assertPage(await getPage(h, "/ui/two-factor/setup", { cookie }));
  assert.match(setup, /<img class="qr" src="data:image\/png;base64,[A-Za-z0-9+/=]+" alt="[^"]+">/);
  const secret = /<code class="secret" id="totp-secret">([A-Z2-7]+)<\/code>/.exec(setup)![1]!;
  const wrongCode = assertPage(await postForm(h, "/ui/two-factor/enable", { secret, code: "000000" }, { cookie }), 401);
  assertErrorSummary(wrongCode, /href="#code"/);
  assert.ok(wrongCode.includes(secret), "the secret stays on the page to retry");
  // Issue 16: the QR code stays too (the same secret, from the stored enrolment, never a posted one).
  assert.equal(/<img class="qr" src="([^"]+)"/.exec(wrongCode)?.[1], /<img class="qr" src="([^"]+)"/.exec(setup)?.[1], "the same QR code after a wrong code");
  const injected = assertPage(await postForm(h, "/ui/two-factor/enable", { secret: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", code: "000000" }, { cookie }), 401);
  assert.ok(injected.includes(secret) && !injected.includes("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), "a posted secret is never shown back");
  h.clock.advance(30 * SECOND);
  // hosted-pages.md#recovery-codes-once: post, redirect, get; the codes ride in a sealed one-time cookie, never the URL.
  const codesView = async (res: Awaited<ReturnType<typeof postForm>>) => {
    assertSeeOther(res, "/ui/two-factor/recovery-codes");
    const view = /recovery_codes_view=([^;]+)/.exec(String(res.headers["set-cookie"]))?.[1];
    assert.ok(view, "the codes' one-time view is in a cookie");
    return assertPage(await getPage(h, "/ui/two-factor/recovery-codes", { cookie, cookies: { recovery_codes_view: decodeURIComponent(view) } }));
  };
  const enabled = await codesView(await postForm(h, "/ui/two-factor/enable", { secret, code: totpAt(secret, h.clock.now()) }, { cookie }));
  const shownCodes = (page: string) => [...page.matchAll(/<li><span class="code-number" aria-hidden="true">(\d+)\.<\/span> <code>([a-z0-9-]+)<\/code><\/li>/g)];
  assert.deepEqual(
    shownCodes(enabled).map((m) => m[1]),
    ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10"],
    "ten recovery codes shown, numbered",
  );
  assert.match(enabled, /role="status">Two-factor authentication is on\. Your other sessions have been logged out\./);
  assert.match(assertPage(await getPage(h, "/ui/account", { cookie })), /<dd>On<\/dd>/);
  // Issue 16: new codes, in the same list; that page no longer claims other sessions were logged out (none are).
  h.clock.advance(30 * SECOND);
  const regenerated = await codesView(await postForm(h, "/ui/two-factor/recovery-codes", { code: totpAt(secret, h.clock.now()) }, { cookie }));
  assert.match(regenerated, /role="status">You have new recovery codes\. Your old ones no longer work\./);
  assert.doesNotMatch(regenerated, /sessions have been logged out/);
  const codes = shownCodes(regenerated).map((m) => m[2]!);
  assert.equal(codes.length, 10, "ten new recovery codes shown");
  assert.equal(codes.filter((c) => shownCodes(enabled).some((m) => m[2] === c)).length, 0, "none of the old ones");

  assertSeeOther(await postForm(h, "/ui/logout", {}, { cookie }), "/ui/login?notice=logged-out");
  assert.equal(await sessionStatus(h, cookie), 401, "logged out");

  // Password login: step one answers the code step with the first step's fields carried along.
  const ip = nextIp();
  const step = assertPage(await postForm(h, "/ui/login", { email, password: OTHER_STRONG_PASSWORD }, { ip }));
  assert.match(step, /<label for="twoFACode">Authentication code<\/label>/);
  assert.equal(inputValue(step, "email"), email);
  assert.equal(inputValue(step, "password"), OTHER_STRONG_PASSWORD, "the password rides along in a hidden field of this no-store page");
  assert.equal(sessionCookieOf(await postForm(h, "/ui/login", { email, password: OTHER_STRONG_PASSWORD, twoFACode: "" }, { ip })), undefined);
  h.clock.advance(30 * SECOND);
  login = await postForm(h, "/ui/login", { email, password: OTHER_STRONG_PASSWORD, twoFACode: totpAt(secret, h.clock.now()) }, { ip });
  assertSeeOther(login, "/ui/account");
  cookie = sessionCookieOf(login)!;
  assert.equal(await sessionStatus(h, cookie), 200);

  // Magic link: the page asks for the code after the first press; the link works until it logs in.
  assertSeeOther(await postForm(h, "/ui/magic-link", { email }, { ip: nextIp() }), "/ui/check-email?for=magic-link");
  const magic = await linkFor("magic_login", "magicLoginLink", email);
  assertPage(await getPage(h, magic.path));
  const codeStep = assertPage(await postForm(h, magic.path, {}));
  assert.match(codeStep, /name="twoFACode"/);
  const recovery = await postForm(h, magic.path, { twoFACode: codes[0]! });
  assertSeeOther(recovery, "/ui/account");
  assert.ok(sessionCookieOf(recovery));
  assertErrorSummary(assertPage(await postForm(h, magic.path, { twoFACode: codes[1]! }), 400), /invalid or has expired/);

  // Reset: the page's form sets a new password; a weak one leaves the link usable.
  assertSeeOther(await postForm(h, "/ui/forgot-password", { email }, { ip: nextIp() }), "/ui/check-email?for=reset");
  const reset = await linkFor("password_reset", "resetLink", email);
  const weak = assertPage(await postForm(h, reset.path, { newPassword: "weakpass" }), 400);
  assertErrorSummary(weak, /href="#newPassword">The password needs/);
  assertSeeOther(await postForm(h, reset.path, { newPassword: "Brand-New-Pass-2026" }), "/ui/login?notice=password-reset");
  h.clock.advance(30 * SECOND);
  const afterReset = await postForm(h, "/ui/login", { email, password: "Brand-New-Pass-2026", twoFACode: totpAt(secret, h.clock.now()) }, { ip: nextIp() });
  assertSeeOther(afterReset, "/ui/account");

  // 2FA off again with the password.
  cookie = sessionCookieOf(afterReset)!;
  assertSeeOther(
    await postForm(h, "/ui/two-factor/disable", { password: "Brand-New-Pass-2026", disableCode: "" }, { cookie }),
    "/ui/two-factor?notice=two-factor-disabled",
  );
  assert.match(assertPage(await getPage(h, "/ui/account", { cookie })), /<dd>Off<\/dd>/);
});

test("email-only registration, resend, and a magic-link login", async () => {
  const email = "linkonly@example.org";
  assertSeeOther(await postForm(h, "/ui/register-email-only", { name: "Link Only", email }, { ip: nextIp() }), "/ui/check-email?for=registration");
  const unverified = assertPage(await postForm(h, "/ui/magic-link", { email }, { ip: nextIp() }), 403);
  assertErrorSummary(unverified, /verify/i);
  assert.match(unverified, /href="\/ui\/resend-verification"/);
  h.clock.advance(6 * 60 * SECOND);
  assertSeeOther(await postForm(h, "/resend-verification", { email }, { ip: nextIp() }), "/ui/check-email?for=verification");
  const verification = await linkFor("verify_email", "verificationLink", email);
  // D18: a resend link carries no password, so its page offers to choose one; left empty, the
  // member is verified without a password and lands on the magic-link page, not the password login.
  const confirmPage = assertPage(await getPage(h, `/ui${verification.path}`));
  assert.match(confirmPage, /Choose a password \(optional\)/);
  // Issue 34's blocker: an optional field the browser would not let through empty.
  const passwordInput = /<input id="password"[^>]*>/.exec(confirmPage)?.[0] ?? "";
  assert.match(passwordInput, /type="password"/);
  assert.doesNotMatch(passwordInput, /\brequired\b/);
  assertSeeOther(await postForm(h, `/ui${verification.path}`, { password: "" }), "/ui/magic-link?notice=email-verified-no-password");
  assert.match(assertPage(await getPage(h, "/ui/magic-link?notice=email-verified-no-password")), /has no password/);
  assertSeeOther(await postForm(h, "/ui/magic-link", { email }, { ip: nextIp() }), "/ui/check-email?for=magic-link");
  const magic = await linkFor("magic_login", "magicLoginLink", email);
  const res = await postForm(h, magic.path, {});
  assertSeeOther(res, "/ui/account");
  // Issue 34: a used link's page offers a new one, not a button that can only fail.
  for (const used of [magic.path, `/ui${verification.path}`]) {
    const usedPage = assertPage(await getPage(h, used), 400);
    assert.match(usedPage, /invalid or has expired/);
    assert.doesNotMatch(usedPage, /<button/);
    assert.match(usedPage, /href="\/ui\/(magic-link|resend-verification)"/);
  }
  assert.match(assertPage(await getPage(h, "/ui/account", { cookie: sessionCookieOf(res)! })), /Your account/);
  // Issue 34: without a password, the menu's password page offers to set one, not a current password to type.
  const passwordPage = assertPage(await getPage(h, "/ui/change-password", { cookie: sessionCookieOf(res)! }));
  assert.match(passwordPage, /<h1>Set a password<\/h1>/);
  assert.match(passwordPage, /href="\/ui\/forgot-password"/);
  assert.doesNotMatch(passwordPage, /name="currentPassword"/);
});
