/**
 * Issue 34's refusals on the hosted pages without JavaScript (hosted-pages.md#refusals): every 429
 * says why, for how long (from Retry-After, in words) and what can be done now, the same for a known
 * and an unknown email; and the recovery codes' one-time view (hosted-pages.md#recovery-codes-once).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test, type TestContext } from "node:test";
import { SECOND } from "../src/core/clock.js";
import { formErrorForCode, messageForError, PASSKEY_NOT_LINKED } from "../src/ui/form-errors.js";
import { escapeHtml } from "../src/ui/html.js";
import { describeWait, refusalFor } from "../src/ui/refusals.js";
import { createHarness, deliverWebhooks, OTHER_STRONG_PASSWORD, registerVerifiedMember, STRONG_PASSWORD, type Harness } from "./support/harness.js";
import { connectUpstream, federatedRoundTrip, setCookieValue } from "./support/federation.js";
import { enrolTwoFactor, loginCookie, magicLinkFor, nextIp, registerPending, WRONG_PASSWORD } from "./support/flows.js";
import { totpAt } from "./support/totp.js";
import { assertErrorSummary, assertPage, assertSeeOther, getPage, postForm, type UiRequestOptions } from "./support/ui-forms.js";

let h: Harness;
before(async () => {
  h = await createHarness({ settings: { loginSuccessRedirect: "/ui/account" } });
});
after(() => h.close());

const OLD_WORDS = /Please try again later/;

/** A verified, signed-in member, each from its own address (the registrations per IP stay under their limit). */
async function member(email: string): Promise<{ cookie: string }> {
  await registerVerifiedMember(h, email, STRONG_PASSWORD, nextIp());
  return { cookie: await loginCookie(h, email, STRONG_PASSWORD, { ip: nextIp() }) };
}

/** The error summary with the address typed taken out: what must read the same for every email. */
function refusalOf(body: string, email: string): string {
  const summary = /<div id="error-summary"[\s\S]*?<\/div>/.exec(body)?.[0];
  assert.ok(summary, "an error summary");
  return summary.replaceAll(email, "EMAIL");
}

test("describeWait words a Retry-After: seconds, a minute, rounded minutes, hours, days", () => {
  assert.equal(describeWait(5), "a few seconds");
  assert.equal(describeWait(60), "about a minute");
  assert.equal(describeWait(180), "about 3 minutes");
  assert.equal(describeWait(2773), "about 45 minutes");
  assert.equal(describeWait(3600), "about an hour");
  assert.equal(describeWait(4 * 3600), "about 4 hours");
  assert.equal(describeWait(7 * 86400), "about 7 days");
  assert.equal(describeWait(undefined), "a few minutes");
});

test("no refusal of any operation keeps 'Too many requests. Please try again later.'; each names the wait", () => {
  for (const operation of [
    "loginWithPassword",
    "requestMagicLink",
    "verifyLoginCode",
    "registerWithPassword",
    "resendVerification",
    "requestPasswordReset",
    "x",
  ]) {
    const words = refusalFor({ operation, retryAfterSeconds: 2773 });
    assert.doesNotMatch(words.message, OLD_WORDS, operation);
    assert.match(words.message, /about 45 minutes/, operation);
  }
});

test("the weak-password message says every rule is needed, not any one of them", () => {
  assert.equal(
    messageForError("weak_password", "", ["uppercase", "number_or_special"]),
    "The password needs all of these: an uppercase letter; a number or a special character.",
  );
  assert.equal(messageForError("weak_password", "", ["uppercase"]), "The password needs an uppercase letter.");
});

test("a passkey the site does not know: not linked to an account here, with the other ways to sign in, and no email named", () => {
  const words = formErrorForCode("passkeyLogin", "invalid_credentials");
  assert.equal(words?.message, PASSKEY_NOT_LINKED);
  assert.doesNotMatch(words.message, /could not be verified/);
  assert.deepEqual(
    words.next?.map((n) => n.href),
    ["/ui/login", "/ui/magic-link", "/ui/register"],
  );
});

test("the magic link's cooldown: we already sent a link, the code form, the wait in words; the same page for a known and an unknown email", async () => {
  const known = "cooldown.known@example.org";
  await member(known);
  const unknown = "cooldown.nobody@example.org";
  const pages: string[] = [];
  for (const email of [known, unknown]) {
    const ip = nextIp();
    assertSeeOther(await postForm(h, "/ui/magic-link", { email }, { ip }), "/ui/check-email?for=magic-link");
    h.clock.advance(15 * SECOND);
    const res = await postForm(h, "/ui/magic-link", { email }, { ip });
    const body = assertPage(res, 429);
    assert.equal(res.headers["retry-after"], "165");
    assertErrorSummary(
      body,
      /a login link was sent to it in the last few minutes\. Check your inbox: open the link, or enter the 6-digit code from that email\. You can ask for another link in about 3 minutes\./,
    );
    assert.match(body, /<a href="\/ui\/check-email\?for=magic-link">Enter the 6-digit code from the email<\/a>/);
    assert.doesNotMatch(body, OLD_WORDS);
    // The code form then knows the address, as after a request that was sent.
    assert.match(String(res.headers["set-cookie"]), new RegExp(`login_email=${encodeURIComponent(email)}`));
    pages.push(refusalOf(body, email));
  }
  assert.equal(pages[0], pages[1], "the refusal reads the same for a known and an unknown email");
});

test("'Check your email' after a link says when another can be asked, instead of a link straight into the cooldown", async () => {
  const body = assertPage(await getPage(h, "/ui/check-email?for=magic-link"));
  assert.match(
    body,
    /If it does not arrive, you can ask for another link after 3 minutes: one link per address every 3 minutes\. <a href="\/ui\/magic-link">Request a new login link<\/a>/,
  );
});

test("a password lockout: the reason, the wait in words, the login link and the reset offered; the same for a known and an unknown email", async () => {
  const known = "lockout.known@example.org";
  await member(known);
  const unknown = "lockout.nobody@example.org";
  const pages: string[] = [];
  for (const email of [known, unknown]) {
    for (let i = 0; i < 3; i++) assertPage(await postForm(h, "/ui/login", { email, password: WRONG_PASSWORD }, { ip: nextIp() }), 401);
    const res = await postForm(h, "/ui/login", { email, password: WRONG_PASSWORD }, { ip: nextIp() });
    const body = assertPage(res, 429);
    assert.equal(res.headers["retry-after"], "3600");
    assertErrorSummary(
      body,
      /Too many failed password attempts for this email address: logging in with a password is paused for about an hour\. You can still log in by email now\./,
    );
    assert.match(body, /<a href="\/ui\/magic-link">Email me a login link instead<\/a>/);
    assert.match(body, /<a href="\/ui\/forgot-password">Reset your password by email<\/a>/);
    assert.doesNotMatch(body, OLD_WORDS);
    pages.push(refusalOf(body, email));
  }
  assert.equal(pages[0], pages[1], "the refusal reads the same for a known and an unknown email");
});

test("a second-factor lockout on the login's code step: the reason and the wait in words, not the password lockout's words", async () => {
  const email = "codes.locked@example.org";
  const { cookie } = await member(email);
  await enrolTwoFactor(h, cookie);
  let body = "";
  for (let attempt = 0; attempt < 5 && !body; attempt++) {
    const res = await postForm(h, "/ui/login", { email, password: STRONG_PASSWORD, twoFACode: "000000" }, { ip: nextIp() });
    if (res.statusCode === 429) body = assertPage(res, 429);
    else assertPage(res, 401);
  }
  assert.ok(body, "the code step is locked after a few wrong codes");
  assertErrorSummary(body, /Too many incorrect authentication codes: codes for this account are paused for about 15 minutes/);
  assert.doesNotMatch(body, /failed password attempts|Please try again later/);
});

test("the confirmation email's cooldown: one was sent, check the inbox, the wait; the same for a known and an unknown email", async () => {
  await registerPending(h, "resend.pending@example.org", STRONG_PASSWORD, { ip: nextIp() });
  const pages: string[] = [];
  for (const email of ["resend.pending@example.org", "resend.nobody@example.org"]) {
    const ip = nextIp();
    assertSeeOther(await postForm(h, "/ui/resend-verification", { email }, { ip }), "/ui/check-email?for=verification");
    const res = await postForm(h, "/ui/resend-verification", { email }, { ip });
    const body = assertPage(res, 429);
    assertErrorSummary(
      body,
      /a confirmation email was sent to it in the last few minutes\. Check your inbox and spam folder\. You can ask for another in about 5 minutes\./,
    );
    pages.push(refusalOf(body, email));
  }
  assert.equal(pages[0], pages[1]);
  await deliverWebhooks(h);
});

test("a 6th registration from one network: the limits and the wait; no dev-mode setting outside dev mode", async () => {
  const ip = nextIp();
  for (let i = 0; i < 5; i++) {
    assertSeeOther(await postForm(h, "/ui/register-email-only", { name: "Many", email: `many${i}@example.org` }, { ip }), "/ui/check-email?for=registration");
  }
  const body = assertPage(await postForm(h, "/ui/register-email-only", { name: "Many", email: "many5@example.org" }, { ip }), 429);
  assertErrorSummary(body, /at most 5 an hour from one network and 3 for one address\. You can register again in about an hour\./);
  assert.doesNotMatch(body, /RATE_LIMITS/);
  // The five confirmation emails go out now, so a later test's "last verify_email" is its own.
  await deliverWebhooks(h);
});

test("recovery codes: post, redirect, get; shown once to this session, never in a URL; Back shows that they were shown", async () => {
  const { cookie } = await member("codes.once@example.org");
  const { secret } = await enrolTwoFactor(h, cookie);
  h.clock.advance(30 * SECOND);
  const res = await postForm(h, "/ui/two-factor/recovery-codes", { code: totpAt(secret, h.clock.now()) }, { cookie });
  assertSeeOther(res, "/ui/two-factor/recovery-codes");
  const setCookie = String(res.headers["set-cookie"]);
  assert.match(setCookie, /recovery_codes_view=[^;]+; Max-Age=300; Path=\/ui\/two-factor\/recovery-codes; HttpOnly; Secure; SameSite=Strict/);
  const view = decodeURIComponent(/recovery_codes_view=([^;]+)/.exec(setCookie)![1]!);

  // Another session with the cookie copied gets nothing.
  const { cookie: other } = await member("codes.other@example.org");
  assert.match(
    assertPage(await getPage(h, "/ui/two-factor/recovery-codes", { cookie: other, cookies: { recovery_codes_view: view } })),
    /Recovery codes already shown/,
  );

  const shown = await getPage(h, "/ui/two-factor/recovery-codes", { cookie, cookies: { recovery_codes_view: view } });
  const body = assertPage(shown);
  const codes = [...body.matchAll(/<code>([a-z0-9-]+)<\/code>/g)].map((m) => m[1]!);
  assert.equal(codes.length, 10, "the ten codes");
  assert.ok(
    codes.every((code) => !view.includes(code) && !setCookie.includes(code) && !String(res.headers.location).includes(code)),
    "the cookie is sealed and the address holds no code",
  );
  assert.match(String(shown.headers["set-cookie"]), /recovery_codes_view=;/, "the view's cookie is cleared");

  // Back (the browser still has the page's URL, perhaps the cookie): the codes are not shown again.
  for (const again of [{ cookie }, { cookie, cookies: { recovery_codes_view: view } }]) {
    const page = assertPage(await getPage(h, "/ui/two-factor/recovery-codes", again));
    assert.match(page, /<h1>Recovery codes already shown<\/h1>/);
    assert.doesNotMatch(page, /<code>/);
    assert.match(page, /<a href="\/ui\/two-factor">Get new recovery codes<\/a>/);
  }
});

test("2FA set-up: post, redirect, get; the page is drawn from this session's stored enrolment, never the URL, and is gone once 2FA is on", async () => {
  const email = "setup.by.get@example.org";
  const { cookie } = await member(email);
  // No enrolment yet: the 2FA page, where it starts.
  assertSeeOther(await getPage(h, "/ui/two-factor/setup", { cookie }), "/ui/two-factor");

  const res = await postForm(h, "/ui/two-factor/setup", { password: STRONG_PASSWORD }, { cookie });
  assertSeeOther(res, "/ui/two-factor/setup");
  const setup = assertPage(await getPage(h, "/ui/two-factor/setup", { cookie }));
  assert.match(setup, /<h1>Set up two-factor authentication<\/h1>/);
  assert.match(setup, /<img class="qr" src="data:image\/png;base64,[A-Za-z0-9+/=]+" alt="[^"]+">/);
  const secret = /<code class="secret" id="totp-secret">([A-Z2-7]+)<\/code>/.exec(setup)![1]!;
  assert.ok(!String(res.headers.location).includes(secret) && res.headers["set-cookie"] === undefined, "the secret rides in no URL and no cookie");
  // Back or a reload is a GET that shows the same enrolment (the app's account stays valid).
  assert.equal(/id="totp-secret">([A-Z2-7]+)</.exec(assertPage(await getPage(h, "/ui/two-factor/setup", { cookie })))?.[1], secret);

  // Another session of the same member neither sees nor finishes this one's enrolment.
  const other = await loginCookie(h, email, STRONG_PASSWORD, { ip: nextIp() });
  assertSeeOther(await getPage(h, "/ui/two-factor/setup", { cookie: other }), "/ui/two-factor");

  h.clock.advance(30 * SECOND);
  assertSeeOther(await postForm(h, "/ui/two-factor/enable", { code: totpAt(secret, h.clock.now()) }, { cookie }), "/ui/two-factor/recovery-codes");
  // 2FA on: Back to the set-up page shows no key again, only the 2FA page.
  const after = await getPage(h, "/ui/two-factor/setup", { cookie });
  assertSeeOther(after, "/ui/two-factor");
  assert.ok(!after.body.includes(secret), "the key is not shown again");
  assert.match(assertPage(await getPage(h, "/ui/two-factor", { cookie })), /Two-factor authentication is on\./);
});

test("a recovery codes' view is over after 5 minutes, even unused", async () => {
  const { cookie } = await member("codes.late@example.org");
  const { secret } = await enrolTwoFactor(h, cookie);
  h.clock.advance(30 * SECOND);
  const res = await postForm(h, "/ui/two-factor/recovery-codes", { code: totpAt(secret, h.clock.now()) }, { cookie });
  const view = decodeURIComponent(/recovery_codes_view=([^;]+)/.exec(String(res.headers["set-cookie"]))![1]!);
  h.clock.advance(5 * 60 * SECOND);
  assert.doesNotMatch(assertPage(await getPage(h, "/ui/two-factor/recovery-codes", { cookie, cookies: { recovery_codes_view: view } })), /<code>/);
});

test("dev mode: a refused registration also says which setting lifts the limit", async () => {
  // Dev mode is refused with PostgreSQL (src/config.ts): this one is SQLite on every pass, as test/ui-dev.test.ts.
  const dataDir = mkdtempSync(join(tmpdir(), "latch-ui-refusals-dev-"));
  const dev = await createHarness({ dataDir, env: { DEV_MODE: "true", DATABASE_URL: `sqlite:${join(dataDir, "dev.db")}` } });
  try {
    const ip = nextIp();
    for (let i = 0; i < 5; i++)
      await postForm(dev, "/ui/register-email-only", { name: "Dev", email: `dev${i}@example.org` }, { ip, domain: dev.tenant.domain });
    const body = assertPage(await postForm(dev, "/ui/register-email-only", { name: "Dev", email: "dev5@example.org" }, { ip, domain: dev.tenant.domain }), 429);
    assertErrorSummary(
      body,
      /at most 5 an hour from one network.*Dev mode: these are Latch&#39;s request limits; restart the server with RATE_LIMITS=off to lift them/,
    );
  } finally {
    await dev.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

/**
 * hosted-pages.md#refusals: a page's 429 is worded by refusalFor of the operation its own form names in
 * data-latch-form (what the script goes by), never by another form's. The own form is the one on the
 * answer that posts to `path` and has a field of every name posted. Returns that operation.
 */
function assertOwnFormsRefusal(res: Awaited<ReturnType<typeof postForm>>, path: string, fields: Record<string, string>): string {
  const body = assertPage(res, 429);
  const pathname = (url: string) => new URL(url.replaceAll("&amp;", "&"), "https://page.invalid").pathname;
  const own = [...body.matchAll(/<form method="post"(?: action="([^"]*)")? data-latch-form="([^"]+)"[^>]*>([\s\S]*?)<\/form>/g)].filter(
    ([, action, , content]) => pathname(action ?? path) === pathname(path) && Object.keys(fields).every((name) => content!.includes(`name="${name}"`)),
  );
  assert.equal(own.length, 1, `one form of ${path} posts ${Object.keys(fields).join(", ")}`);
  const operation = own[0]![2]!;
  const words = refusalFor({ operation, retryAfterSeconds: Number(res.headers["retry-after"]), secondFactorStep: "twoFACode" in fields });
  const summary = /<div id="error-summary"[\s\S]*?<\/div>/.exec(body)?.[0] ?? "";
  assert.ok(summary.includes(`<li>${escapeHtml(words.message)}`), `${path}: the words of ${operation}, in ${summary}`);
  assert.equal([...summary.matchAll(/<a href=/g)].length, words.next.length, `${path}: the ways on of ${operation}`);
  for (const next of words.next) assert.ok(summary.includes(`<a href="${escapeHtml(next.href)}">${escapeHtml(next.text)}</a>`), `${path}: ${next.text}`);
  return operation;
}

/** Posts `fields` to `path` until the answer is a 429 (at most `tries` posts), then checks its words. */
async function refuseUntil429(path: string, fields: Record<string, string>, options: UiRequestOptions & { tries?: number; newIpEach?: boolean } = {}) {
  const { tries = 12, newIpEach = false, ...request } = options;
  const ip = request.ip ?? nextIp();
  for (let i = 0; i < tries; i++) {
    const res = await postForm(h, path, fields, { ...request, ip: newIpEach ? nextIp() : ip });
    if (res.statusCode === 429) return assertOwnFormsRefusal(res, path, fields);
  }
  return assert.fail(`${path} never answered 429 in ${tries} posts`);
}

test("every form a limit or lockout refuses without a member: the words of the operation its own form names", async () => {
  const refused = [
    await refuseUntil429("/ui/login", { email: "own.locked@example.org", password: WRONG_PASSWORD }, { newIpEach: true }),
    await refuseUntil429("/ui/magic-link", { email: "own.cooldown@example.org" }),
    await refuseUntil429("/ui/check-email", { email: "own.codes@example.org", code: "000000" }),
    await refuseUntil429("/ui/register", { name: "Own", email: "own.register@example.org", password: STRONG_PASSWORD }, { newIpEach: true }),
    await refuseUntil429("/ui/register-email-only", { name: "Own", email: "own.email-only@example.org" }, { newIpEach: true }),
    await refuseUntil429("/ui/resend-verification", { email: "own.resend@example.org" }),
    await refuseUntil429("/resend-verification", { email: "own.resend.root@example.org" }),
    await refuseUntil429("/ui/forgot-password", { email: "own.reset@example.org" }, { newIpEach: true }),
    await refuseUntil429("/ui/federated-second-factor", { twoFACode: "000000" }),
  ];
  assert.deepEqual(refused, [
    "loginWithPassword",
    "requestMagicLink",
    "verifyLoginCode",
    "registerWithPassword",
    "registerWithMagicLink",
    "resendVerification",
    "resendVerification",
    "requestPasswordReset",
    "finishFederatedSecondFactor",
  ]);
  await deliverWebhooks(h);
});

test("every re-authenticated account form behind a password lockout: the words of the operation its own form names", async (t: TestContext) => {
  const email = "own.reauth@example.org";
  const { cookie } = await member(email);
  // A linked identity, so the unlink form exists (test/ui-federation.test.ts links one the same way).
  const idp = await connectUpstream(h, t);
  const go = await postForm(h, "/ui/account/identities/link", { connection: "up", password: STRONG_PASSWORD }, { cookie });
  const authorizationUrl = /^0; url=(.+)$/.exec(String(assertPage(go) && go.headers.refresh))![1]!;
  await federatedRoundTrip(
    h,
    idp,
    { email: "own.elsewhere@example.com", verified: false },
    { started: { authorizationUrl, flowCookie: setCookieValue(go, "latch_fed")! }, session: cookie },
  );
  const list = assertPage(await getPage(h, "/ui/account/identities", { cookie }));
  const id = new URL(/href="(\/ui\/account\/identities\/unlink\?id=[^"]+)"/.exec(list)![1]!.replaceAll("&amp;", "&"), "https://x.invalid").searchParams.get(
    "id",
  )!;

  const refused = [await refuseUntil429("/ui/change-password", { currentPassword: WRONG_PASSWORD, newPassword: OTHER_STRONG_PASSWORD }, { cookie })];
  // The password is locked now: each form that asks for it is refused at once, in its own words.
  for (const [path, fields] of [
    ["/ui/account/email", { newEmail: "own.new@example.org", password: STRONG_PASSWORD }],
    ["/ui/account/delete", { password: STRONG_PASSWORD }],
    ["/ui/two-factor/setup", { password: STRONG_PASSWORD }],
    ["/ui/account/identities/link", { connection: "up", password: STRONG_PASSWORD }],
    ["/ui/account/identities/unlink", { id, password: STRONG_PASSWORD }],
  ] as const) {
    refused.push(await refuseUntil429(path, fields, { cookie, tries: 1 }));
  }
  assert.deepEqual(refused, ["changePassword", "changeEmail", "deleteAccount", "setUpTwoFactor", "startIdentityLink", "unlinkIdentity"]);
});

test("every second-factor form behind a code lockout: the words of the operation its own form names", async () => {
  const email = "own.codes.locked@example.org";
  const { cookie } = await member(email);
  await enrolTwoFactor(h, cookie);
  const refused = [await refuseUntil429("/ui/two-factor/recovery-codes", { code: "000000" }, { cookie, tries: 6 })];
  // Codes are locked now: each code form is refused at once, in its own words.
  refused.push(await refuseUntil429("/ui/two-factor/disable", { disableCode: "000000" }, { cookie, tries: 1 }));
  refused.push(await refuseUntil429("/ui/login", { email, password: STRONG_PASSWORD, twoFACode: "000000" }, { tries: 1 }));
  const link = await magicLinkFor(h, email, { ip: nextIp() });
  for (const path of [`/verify-magic-link/${link.recordId}/${link.token}`, `/ui/verify-magic-link/${link.recordId}/${link.token}`]) {
    refused.push(await refuseUntil429(path, { twoFACode: "000000" }, { tries: 1 }));
  }
  refused.push(await refuseUntil429("/ui/check-email", { email, code: link.code, twoFACode: "000000" }, { tries: 1 }));
  assert.deepEqual(refused, ["regenerateRecoveryCodes", "disableTwoFactor", "loginWithPassword", "verifyMagicLink", "verifyMagicLink", "verifyLoginCode"]);
});
