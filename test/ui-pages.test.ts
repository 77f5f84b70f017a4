/**
 * The hosted pages (issue 7), without JavaScript, through app.inject: every page renders with its
 * security headers; a GET of a link page uses nothing; every form works for a `none` tenant by
 * plain form posts; errors come back in the form; unknown sites, foreign origins and markup in
 * values are handled. The browser suite (test/e2e) drives the same pages in Chromium.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Challenge } from "altcha-lib";
import { PAGE_CSP } from "../src/ui/layout.js";
import { safeRedirectPath } from "../src/ui/paths.js";
import { createHarness, deliverWebhooks, parseLink, post, registerVerifiedMember, sessionCookieOf, STRONG_PASSWORD, type Harness } from "./support/harness.js";
import { enrolTwoFactor, lastWebhookFor, nextIp, sessionStatus, storeTenantSettings } from "./support/flows.js";
import { totpAt } from "./support/totp.js";
import { assertErrorSummary, assertPage, assertSeeOther, getPage, inputValue, postForm, signInOnPage } from "./support/ui-forms.js";
import { solveAltcha } from "./support/altcha.js";

let h: Harness;
before(async () => {
  h = await createHarness();
});
after(() => h.close());

test("every page renders 200 with its CSP, referrer policy, nosniff and no-store", async () => {
  await registerVerifiedMember(h, "pages@example.org");
  const cookie = await signInOnPage(h, "pages@example.org");
  const publicPages = [
    "/ui/register",
    "/ui/register-email-only",
    "/ui/login",
    "/ui/magic-link",
    "/ui/forgot-password",
    "/ui/resend-verification",
    "/resend-verification",
    "/ui/check-email?for=registration",
    "/ui/check-email?for=magic-link",
  ];
  const linkPages = ["email-verified", "reset-password", "verify-magic-link", "email-change", "secure-account"].flatMap((p) => [
    `/${p}/123456789012345/${"A".repeat(43)}`,
    `/ui/${p}/123456789012345/${"A".repeat(43)}`,
  ]);
  for (const url of [...publicPages, ...linkPages]) {
    // The links that check themselves (issues 16 and 34): a made-up one is a dead-link page, 400.
    const checked = ["reset-password", "email-verified", "verify-magic-link"].some((p) => url.includes(`/${p}/`));
    const body = assertPage(await getPage(h, url), checked ? 400 : 200);
    assert.equal(body.match(/<h1>/g)?.length, 1, `${url}: one h1`);
    assert.match(body, /<main id="main"/, url);
    assert.match(body, /<a class="skip" href="#main">/, url);
    assert.match(body, /<title>[^<]+ · members\.example\.com<\/title>/, url);
  }
  for (const url of ["/ui/account", "/ui/change-password", "/ui/two-factor", "/ui/account/profile", "/ui/account/sessions", "/ui/account/delete"]) {
    const body = assertPage(await getPage(h, url, { cookie }));
    assert.equal(body.match(/<h1>/g)?.length, 1, url);
  }
  assert.ok(PAGE_CSP.includes("frame-ancestors 'none'") && PAGE_CSP.includes("script-src 'self'") && !PAGE_CSP.includes("unsafe-inline"));
});

test("every input has a label and an autocomplete attribute", async () => {
  await registerVerifiedMember(h, "labels@example.org");
  const cookie = await signInOnPage(h, "labels@example.org");
  for (const [url, options] of [
    ["/ui/register", {}],
    ["/ui/login", {}],
    ["/ui/check-email?for=magic-link", {}],
    ["/ui/reset-password/123456789012345/abc", {}],
    ["/ui/account/profile", { cookie }],
    ["/ui/account/delete", { cookie }],
    ["/ui/account/passkeys", { cookie }],
  ] as const) {
    const body = (await getPage(h, url, options)).body;
    for (const input of body.match(/<input [^>]*>/g) ?? []) {
      if (/type="hidden"/.test(input)) continue;
      const id = /id="([^"]+)"/.exec(input)?.[1];
      assert.ok(id && body.includes(`<label for="${id}">`), `${url}: ${input} has a label`);
      // "username webauthn": the login email offers passkeys in its autofill (D26); "off": a passkey's name.
      assert.match(input, /autocomplete="(email|name|current-password|new-password|one-time-code|username webauthn|off)"/, `${url}: ${input}`);
    }
  }
});

test("/ui/ sends a visitor to log in and a member to the account; pages behind the session redirect to login", async () => {
  assertSeeOther(await getPage(h, "/ui/"), "/ui/login");
  assertSeeOther(await getPage(h, "/ui/account"), "/ui/login?notice=login-required");
  assertSeeOther(await postForm(h, "/ui/change-password", { currentPassword: "x", newPassword: "y" }), "/ui/login?notice=login-required");
  await registerVerifiedMember(h, "home@example.org");
  assertSeeOther(await getPage(h, "/ui/", { cookie: await signInOnPage(h, "home@example.org") }), "/ui/account");
});

test("opening a link page changes nothing: each token still works afterwards", async () => {
  const email = "scanner@example.org";
  const reg = await postForm(h, "/ui/register", { name: "Scan Ner", email, password: STRONG_PASSWORD }, { ip: nextIp() });
  assertSeeOther(reg, "/ui/check-email?for=registration");
  await deliverWebhooks(h);
  const verification = parseLink(lastWebhookFor(h, "verify_email", email).body.verificationLink!);
  for (const prefix of ["", "/ui"]) assertPage(await getPage(h, `${prefix}/email-verified/${verification.recordId}/${verification.token}`));
  assert.equal(
    (await post(h, "/auth/verify-email", { recordId: verification.recordId, token: verification.token })).statusCode,
    200,
    "the verification token was not used by the GETs",
  );

  assertSeeOther(await postForm(h, "/ui/forgot-password", { email }, { ip: nextIp() }), "/ui/check-email?for=reset");
  await deliverWebhooks(h);
  const reset = parseLink(lastWebhookFor(h, "password_reset", email).body.resetLink!);
  for (const prefix of ["", "/ui"]) assertPage(await getPage(h, `${prefix}/reset-password/${reset.recordId}/${reset.token}`));
  assert.equal(
    (await post(h, "/auth/reset-password", { ...reset, newPassword: "Another-Good-Pass-77" })).statusCode,
    200,
    "the reset token was not used by the GETs",
  );
  // Issue 16: once used, the link's page shows no form to fill in for nothing, but the way to a new link.
  const usedReset = assertPage(await getPage(h, `/reset-password/${reset.recordId}/${reset.token}`), 400);
  assert.doesNotMatch(usedReset, /Set new password/);
  assert.match(usedReset, /Request a new reset link/);

  assertSeeOther(await postForm(h, "/ui/magic-link", { email }, { ip: nextIp() }), "/ui/check-email?for=magic-link");
  await deliverWebhooks(h);
  const magic = parseLink(lastWebhookFor(h, "magic_login", email).body.magicLoginLink!);
  for (const prefix of ["", "/ui"]) {
    const body = assertPage(await getPage(h, `${prefix}/verify-magic-link/${magic.recordId}/${magic.token}`));
    assert.ok(!body.includes(magic.token), "the token is not written into the page");
  }
  const used = await post(h, `/auth/verify-magic-link/${magic.recordId}/${magic.token}`, { "bot-challenge-response": "x" });
  assert.equal(used.statusCode, 200, used.body);
});

test("a redirect after a form post sends no Referer onward: the link page's address (with its token) stays behind", async () => {
  const email = "referrer@example.org";
  await registerVerifiedMember(h, email);
  assertSeeOther(await postForm(h, "/ui/magic-link", { email }, { ip: nextIp() }), "/ui/check-email?for=magic-link");
  await deliverWebhooks(h);
  const magic = parseLink(lastWebhookFor(h, "magic_login", email).body.magicLoginLink!);
  const signedIn = await postForm(h, `/verify-magic-link/${magic.recordId}/${magic.token}`, {}, { ip: nextIp() });
  assert.equal(signedIn.statusCode, 303, signedIn.body);
  assert.equal(signedIn.headers["referrer-policy"], "no-referrer");
});

test("notices and 'sent' texts come only from their own tables, never from Object.prototype", async () => {
  for (const url of ["/ui/login?notice=constructor", "/ui/login?notice=__proto__", "/ui/check-email?for=toString", "/ui/check-email?for=hasOwnProperty"]) {
    const body = assertPage(await getPage(h, url));
    assert.ok(!/function|native code|\[object/.test(body), `${url} shows a prototype member`);
  }
});

test("safeRedirectPath: same-origin printable paths only, anything else falls back", () => {
  for (const ok of ["/", "/ui/account", "/a%20b?x=1#y"]) assert.equal(safeRedirectPath(ok, "/fallback"), ok);
  for (const bad of ["//evil.example", "/\\evil.example", "https://evil.example", "/日本", "/a b", "/a\tb", "", "x", undefined]) {
    assert.equal(safeRedirectPath(bad, "/fallback"), "/fallback", String(bad));
  }
});

test("a form error comes back in the form: role=alert summary, field marked, email kept, password never", async () => {
  const res = await postForm(h, "/ui/register", { name: "Weak Pass", email: "weak@example.org", password: "short" }, { ip: nextIp() });
  const body = assertPage(res, 400);
  assertErrorSummary(body, /<a href="#password">The password needs all of these: at least 8 characters; /);
  assert.equal(inputValue(body, "email"), "weak@example.org");
  assert.equal(inputValue(body, "name"), "Weak Pass");
  assert.equal(inputValue(body, "password"), undefined, "the password is never written back");
  assert.ok(!body.includes('value="short"'));
  assert.match(body, /<input id="password"[^>]*aria-invalid="true"[^>]*aria-describedby="password-error password-hint"/);
  assert.match(body, /<title>Error: Register/);

  const missing = assertPage(await postForm(h, "/ui/login", { email: "", password: "" }, { ip: nextIp() }), 400);
  assertErrorSummary(missing, /href="#email">Enter your email address/);
  const wrong = assertPage(await postForm(h, "/ui/login", { email: "nobody@example.org", password: "Wrong-Pass-123" }, { ip: nextIp() }), 401);
  assertErrorSummary(wrong, /The email or password is incorrect/);
  assert.equal(inputValue(wrong, "email"), "nobody@example.org");
  assert.equal(inputValue(wrong, "password"), undefined);
});

test("a value with markup is escaped wherever it is written back", async () => {
  const name = `<script>alert("x")</script>`;
  const body = assertPage(await postForm(h, "/ui/register", { name, email: `"><script>1</script>@x`, password: "short" }, { ip: nextIp() }), 400);
  assert.ok(!body.includes("<script>alert"), "no raw script from the name");
  assert.ok(!body.includes("<script>1</script>"), "no raw script from the email");
  assert.ok(body.includes("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"));
  const notice = await getPage(h, `/ui/login?notice=${encodeURIComponent("<b>x</b>")}`);
  assert.ok(!assertPage(notice).includes("<b>x</b>"), "a notice is looked up by key, never echoed");
});

test("an unknown site gets an HTML 404; assets are served to any site", async () => {
  const res = await getPage(h, "/ui/login", { domain: "unknown.example.net" });
  const body = assertPage(res, 404);
  assert.match(body, /<h1>Site not found<\/h1>/);
  const link = assertPage(await getPage(h, "/email-verified/1/abc", { domain: "unknown.example.net" }), 404);
  assert.match(link, /Site not found/);
  for (const asset of ["hosted.css", "hosted.js", "altcha.js", "altcha.css", "altcha-worker-pbkdf2.js", "altcha-worker-sha.js"]) {
    const res = await getPage(h, `/ui/assets/${asset}`, { domain: "unknown.example.net" });
    assert.equal(res.statusCode, 200, `${asset}: ${res.statusCode}`);
    assert.match(String(res.headers["content-type"]), asset.endsWith(".css") ? /^text\/css/ : /^text\/javascript/);
    assert.equal(res.headers["x-content-type-options"], "nosniff");
  }
  assert.equal((await getPage(h, "/ui/assets/../package.json")).statusCode, 404);
});

test("an unknown page under /ui/ is an HTML 404 page; an unknown API route keeps the JSON 404", async () => {
  const body = assertPage(await getPage(h, "/ui/no-such-page"), 404);
  assert.match(body, /<h1>Page not found<\/h1>/);
  const api = await getPage(h, "/auth/no-such-route");
  assert.equal(api.statusCode, 404);
  assert.equal(api.json().code, "not_found");
});

test("a form post from another origin is refused, with the session cookie and on login", async () => {
  await registerVerifiedMember(h, "csrf@example.org");
  const cookie = await signInOnPage(h, "csrf@example.org");
  const change = await postForm(
    h,
    "/ui/change-password",
    { currentPassword: STRONG_PASSWORD, newPassword: "Attacker-Chosen-99" },
    { cookie, origin: "https://evil.example.net" },
  );
  const body = assertPage(change, 403);
  assert.match(body, /Request refused/);
  const logout = await postForm(h, "/ui/logout", {}, { cookie, origin: "null" });
  assertPage(logout, 403);
  assert.equal(await sessionStatus(h, cookie), 200, "the session survived both");
  // Login CSRF: no cookie yet, still refused from a foreign origin.
  const login = await postForm(h, "/ui/login", { email: "csrf@example.org", password: STRONG_PASSWORD }, { origin: "https://evil.example.net" });
  assertPage(login, 403);
  assert.equal(sessionCookieOf(login), undefined);
});

test("the ALTCHA widget is on every guarded form of an ALTCHA tenant, and only there", async () => {
  const altcha = await createHarness({ domain: "altcha.example.com" });
  try {
    // A live magic link, made before the tenant turns ALTCHA on (a dead link's page has no form to guard).
    await registerVerifiedMember(altcha, "al@example.org");
    assertSeeOther(await postForm(altcha, "/ui/magic-link", { email: "al@example.org" }, { ip: nextIp() }), "/ui/check-email?for=magic-link");
    await deliverWebhooks(altcha);
    const magic = parseLink(lastWebhookFor(altcha, "magic_login", "al@example.org").body.magicLoginLink!);
    await storeTenantSettings(altcha, { botProtection: { provider: "altcha" } });
    for (const url of [
      "/ui/register",
      "/ui/register-email-only",
      "/ui/login",
      "/ui/magic-link",
      "/ui/forgot-password",
      "/ui/resend-verification",
      `/verify-magic-link/${magic.recordId}/${magic.token}`,
      "/ui/check-email?for=magic-link",
    ]) {
      const body = (await getPage(altcha, url)).body;
      assert.match(body, /<form method="post"[^>]*>[\s\S]*<altcha-widget challenge="\/auth\/bot-challenge" name="bot-challenge-response"[\s\S]*<\/form>/, url);
      assert.match(body, /<script type="module" src="\/ui\/assets\/altcha\.js"><\/script>/, url);
    }
    for (const url of ["/email-verified/123456789012345/abc", "/reset-password/123456789012345/abc", "/ui/check-email?for=registration"]) {
      assert.ok(!(await getPage(altcha, url)).body.includes("altcha-widget"), `${url} is not bot-guarded`);
    }
    // Without the widget's answer the flow's own check refuses, and the form comes back.
    const res = await postForm(altcha, "/ui/login", { email: "a@example.org", password: "Whatever-123" });
    assertErrorSummary(assertPage(res, 403), /Bot protection validation failed/);
    const code = await postForm(altcha, "/ui/check-email?for=magic-link", { email: "a@example.org", code: "123456" });
    assertErrorSummary(assertPage(code, 403), /Bot protection validation failed/);
    // The widget's answer, posted in the form's bot-challenge-response field, passes it.
    const answer = await solveAltcha((await getPage(altcha, "/auth/bot-challenge")).json<Challenge>());
    const sent = await postForm(altcha, "/ui/forgot-password", { email: "a@example.org", "bot-challenge-response": answer });
    assertSeeOther(sent, "/ui/check-email?for=reset");
  } finally {
    await altcha.close();
  }
  assert.ok(!(await getPage(h, "/ui/login")).body.includes("altcha"), "a `none` tenant gets no widget");
});

test("a form body over 16 KiB gets an HTML 413", async () => {
  const res = await postForm(h, "/ui/login", { email: "a@example.org", password: "x".repeat(17 * 1024) });
  assertPage(res, 413);
});

test("no token from a link page reaches the logs", async () => {
  const token = "Tok3nThatMustNotBeLogged_0123456789abcdefghi";
  await getPage(h, `/email-verified/123456789012345/${token}`);
  await postForm(h, `/ui/reset-password/123456789012345/${token}`, { newPassword: STRONG_PASSWORD });
  await postForm(h, `/verify-magic-link/123456789012345/${token}`, {});
  assert.ok(!h.logs.join("\n").includes(token), "token in logs");
});

// ---- D26: the code of a magic link email, typed on the "check your email" page ----

const CODE_PAGE = "/ui/check-email?for=magic-link";

/** Asks for a link on the page (it must answer 303) and returns the remembered-email cookie it set and the emailed code. */
async function requestLinkOnPage(email: string): Promise<{ remembered: Record<string, string>; code: string }> {
  const res = await postForm(h, "/ui/magic-link", { email }, { ip: nextIp() });
  assertSeeOther(res, CODE_PAGE);
  const cookie = res.cookies.find((c) => c.name === "login_email");
  assert.ok(cookie, "the page remembers the address for the code form");
  assert.equal(cookie.value, email);
  assert.equal(cookie.path, "/ui/check-email", "sent to that page only");
  assert.equal(cookie.maxAge, 15 * 60, "for the link's lifetime");
  assert.equal(cookie.sameSite, "Strict");
  assert.equal(cookie.secure, true);
  await deliverWebhooks(h);
  const code = lastWebhookFor(h, "magic_login", email).body.code!;
  assert.match(code, /^[0-9]{6}$/);
  return { remembered: { login_email: email }, code };
}

/** Six digits that are not `code`. */
function otherCode(code: string): string {
  return String((Number(code) + 1) % 1_000_000).padStart(6, "0");
}

test("D26: after 'Email me a login link', the check-your-email page offers the code; the right code logs in with a 303 and the session cookie", async () => {
  const email = "code.page@example.org";
  await registerVerifiedMember(h, email, STRONG_PASSWORD, nextIp());
  const { remembered, code } = await requestLinkOnPage(email);

  const body = assertPage(await getPage(h, CODE_PAGE, { cookies: remembered }));
  assert.match(body, /<h2 id="login-code-title">Or enter the 6-digit code from the email<\/h2>/);
  assert.match(body, /<form method="post" action="\/ui\/check-email\?for=magic-link" data-latch-form="verifyLoginCode" aria-labelledby="login-code-title">/);
  assert.match(body, /<label for="code">Code from the email<\/label>/);
  const input = /<input id="code"[^>]*>/.exec(body)?.[0] ?? "";
  for (const attribute of [
    'name="code"',
    'type="text"',
    'autocomplete="one-time-code"',
    'inputmode="numeric"',
    'pattern="[0-9]{6}"',
    'maxlength="6"',
    "required",
  ]) {
    assert.ok(input.includes(attribute), `${input} has ${attribute}`);
  }
  assert.match(body, new RegExp(`<input type="hidden" name="email" value="${email}">`), "the address asked for rides along hidden");
  assert.ok(!body.includes('<input id="email"'), "and is not asked again");
  assert.ok(body.includes(`<strong>${email}</strong>`), "the page says which address");
  // Without the remembered address (another browser, or it expired) the form asks for it.
  assert.match(assertPage(await getPage(h, CODE_PAGE)), /<input id="email" name="email" type="email" autocomplete="email" required value="">/);
  // Only the magic link's variant has the form.
  for (const sentFor of ["registration", "verification", "reset", "email-change"]) {
    assert.ok(!assertPage(await getPage(h, `/ui/check-email?for=${sentFor}`, { cookies: remembered })).includes('name="code"'), sentFor);
  }

  const signedIn = await postForm(h, CODE_PAGE, { email, code }, { cookies: remembered, ip: nextIp() });
  assertSeeOther(signedIn, "/");
  assert.equal(signedIn.headers["referrer-policy"], "no-referrer");
  const session = sessionCookieOf(signedIn);
  assert.ok(session, "the session cookie is set");
  assert.equal(await sessionStatus(h, session), 200);
  const forgotten = signedIn.cookies.find((c) => c.name === "login_email");
  assert.ok(forgotten && forgotten.value === "" && forgotten.path === "/ui/check-email", "the remembered address is cleared once used");

  // Single use, and using the code used the link too (D26).
  const again = assertPage(await postForm(h, CODE_PAGE, { email, code }, { ip: nextIp() }), 400);
  assertErrorSummary(again, /That code is wrong or has expired/);
  const { recordId, token } = parseLink(lastWebhookFor(h, "magic_login", email).body.magicLoginLink!);
  assertPage(await postForm(h, `/verify-magic-link/${recordId}/${token}`, {}), 400);
});

test("D26: a wrong code comes back in the form with the page's own words (by error code), the email kept and no cookie; the right code still works", async () => {
  const email = "code.wrong@example.org";
  await registerVerifiedMember(h, email, STRONG_PASSWORD, nextIp());
  const { remembered, code } = await requestLinkOnPage(email);

  const wrong = await postForm(h, CODE_PAGE, { email, code: otherCode(code) }, { cookies: remembered, ip: nextIp() });
  const body = assertPage(wrong, 400);
  assertErrorSummary(body, /<a href="#code">That code is wrong or has expired\. Check the latest email, or ask for a new link\.<\/a>/);
  assert.ok(!body.includes("This code is invalid or has expired."), "the flow's message is not the page's");
  assert.match(body, /<input id="code"[^>]*aria-invalid="true"[^>]*aria-describedby="code-error code-hint"/);
  assert.equal(inputValue(body, "email"), email, "the email is kept");
  assert.equal(inputValue(body, "code"), undefined, "the wrong code is not written back");
  assert.match(body, /<title>Error: Check your email/);
  assert.equal(sessionCookieOf(wrong), undefined);

  // An email typed in the form (nothing remembered) stays a field, with what was typed.
  const typed = assertPage(await postForm(h, CODE_PAGE, { email: "typo@example.org", code: otherCode(code) }, { ip: nextIp() }), 400);
  assert.match(typed, /<input id="email" name="email" type="email" autocomplete="email" required value="typo@example.org">/);
  assertErrorSummary(typed, /That code is wrong or has expired/);
  // Not six digits: refused before the flow, like the JSON route's schema.
  const malformed = assertPage(await postForm(h, CODE_PAGE, { email, code: "12a4" }, { cookies: remembered, ip: nextIp() }), 400);
  assertErrorSummary(malformed, /<a href="#code">Enter the 6-digit code from the email\.<\/a>/);

  const signedIn = await postForm(h, CODE_PAGE, { email, code }, { cookies: remembered, ip: nextIp() });
  assertSeeOther(signedIn, "/");
  assert.ok(sessionCookieOf(signedIn));
});

test("D26: a member with 2FA gets the magic link's two-factor step, the email and code carried hidden; a wrong TOTP keeps the step, the right one logs in", async () => {
  const email = "code.totp@example.org";
  await registerVerifiedMember(h, email, STRONG_PASSWORD, nextIp());
  const { secret } = await enrolTwoFactor(h, await signInOnPage(h, email));
  const { remembered, code } = await requestLinkOnPage(email);
  const ip = nextIp();

  const stepRes = await postForm(h, CODE_PAGE, { email, code }, { cookies: remembered, ip });
  const step = assertPage(stepRes);
  assert.equal(sessionCookieOf(stepRes), undefined, "no session before the second factor");
  assert.match(step, /<h1>Enter your authentication code<\/h1>/, "the magic link's two-factor step");
  assert.match(step, /<form method="post" action="\/ui\/check-email\?for=magic-link" data-latch-form="verifyLoginCode">/);
  assert.match(step, /<label for="twoFACode">Authentication code<\/label>/);
  assert.equal(inputValue(step, "email"), email);
  assert.equal(inputValue(step, "code"), code, "the emailed code rides along in a hidden field of this no-store page");

  const empty = assertPage(await postForm(h, CODE_PAGE, { email, code, twoFACode: "" }, { ip }));
  assertErrorSummary(empty, /href="#twoFACode">Enter the code from your authenticator app/);
  const wrongTotp = assertPage(await postForm(h, CODE_PAGE, { email, code, twoFACode: otherCode(totpAt(secret, h.clock.now())) }, { ip }), 401);
  assertErrorSummary(wrongTotp, /href="#twoFACode"/);
  assert.match(wrongTotp, /<h1>Enter your authentication code<\/h1>/);
  assert.equal(inputValue(wrongTotp, "code"), code, "a wrong second factor leaves the emailed code usable (D15)");

  const signedIn = await postForm(h, CODE_PAGE, { email, code, twoFACode: totpAt(secret, h.clock.now()) }, { ip });
  assertSeeOther(signedIn, "/");
  const session = sessionCookieOf(signedIn);
  assert.ok(session, "the session cookie is set");
  assert.equal(await sessionStatus(h, session), 200);
});
