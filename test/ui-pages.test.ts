/**
 * The hosted pages (issue 7), without JavaScript, through app.inject: every page renders with its
 * security headers; a GET of a link page uses nothing; every form works for a `none` tenant by
 * plain form posts; errors come back in the form; unknown sites, foreign origins and markup in
 * values are handled. The browser suite (test/e2e) drives the same pages in Chromium.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { solveChallenge, type Challenge } from "altcha-lib";
import { deriveKey } from "altcha-lib/algorithms/sha";
import { PAGE_CSP } from "../src/ui/layout.js";
import { safeRedirectPath } from "../src/ui/paths.js";
import { createHarness, deliverWebhooks, parseLink, post, registerVerifiedMember, sessionCookieOf, STRONG_PASSWORD, type Harness } from "./support/harness.js";
import { lastWebhookFor, nextIp, sessionStatus } from "./support/flows.js";
import { assertErrorSummary, assertPage, assertSeeOther, getPage, inputValue, postForm } from "./support/ui-forms.js";

let h: Harness;
before(async () => {
  h = await createHarness();
});
after(() => h.close());

async function loginCookie(email: string, password = STRONG_PASSWORD): Promise<string> {
  const res = await postForm(h, "/ui/login", { email, password }, { ip: nextIp() });
  assertSeeOther(res, "/");
  const cookie = sessionCookieOf(res);
  assert.ok(cookie, "login sets the session cookie");
  return cookie;
}

test("every page renders 200 with its CSP, referrer policy, nosniff and no-store", async () => {
  await registerVerifiedMember(h, "pages@example.org");
  const cookie = await loginCookie("pages@example.org");
  const publicPages = ["/ui/register", "/ui/register-email-only", "/ui/login", "/ui/magic-link", "/ui/forgot-password", "/ui/resend-verification", "/resend-verification", "/ui/check-email?for=registration"];
  const linkPages = ["email-verified", "reset-password", "verify-magic-link", "email-change", "secure-account"].flatMap((p) => [`/${p}/123456789012345/${"A".repeat(43)}`, `/ui/${p}/123456789012345/${"A".repeat(43)}`]);
  for (const url of [...publicPages, ...linkPages]) {
    const body = assertPage(await getPage(h, url));
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
  const cookie = await loginCookie("labels@example.org");
  for (const [url, options] of [["/ui/register", {}], ["/ui/login", {}], ["/ui/reset-password/123456789012345/abc", {}], ["/ui/account/profile", { cookie }], ["/ui/account/delete", { cookie }]] as const) {
    const body = (await getPage(h, url, options)).body;
    for (const input of body.match(/<input [^>]*>/g) ?? []) {
      if (/type="hidden"/.test(input)) continue;
      const id = /id="([^"]+)"/.exec(input)?.[1];
      assert.ok(id && body.includes(`<label for="${id}">`), `${url}: ${input} has a label`);
      assert.match(input, /autocomplete="(email|name|current-password|new-password|one-time-code)"/, `${url}: ${input}`);
    }
  }
});

test("/ui/ sends a visitor to log in and a member to the account; pages behind the session redirect to login", async () => {
  assertSeeOther(await getPage(h, "/ui/"), "/ui/login");
  assertSeeOther(await getPage(h, "/ui/account"), "/ui/login?notice=login-required");
  assertSeeOther(await postForm(h, "/ui/change-password", { currentPassword: "x", newPassword: "y" }), "/ui/login?notice=login-required");
  await registerVerifiedMember(h, "home@example.org");
  assertSeeOther(await getPage(h, "/ui/", { cookie: await loginCookie("home@example.org") }), "/ui/account");
});

test("opening a link page changes nothing: each token still works afterwards", async () => {
  const email = "scanner@example.org";
  const reg = await postForm(h, "/ui/register", { name: "Scan Ner", email, password: STRONG_PASSWORD }, { ip: nextIp() });
  assertSeeOther(reg, "/ui/check-email?for=registration");
  await deliverWebhooks(h);
  const verification = parseLink(lastWebhookFor(h, "verify_email", email).body.verificationLink!);
  for (const prefix of ["", "/ui"]) assertPage(await getPage(h, `${prefix}/email-verified/${verification.recordId}/${verification.token}`));
  assert.equal((await post(h, "/auth/verify-email", { recordId: verification.recordId, token: verification.token })).statusCode, 200, "the verification token was not used by the GETs");

  assertSeeOther(await postForm(h, "/ui/forgot-password", { email }, { ip: nextIp() }), "/ui/check-email?for=reset");
  await deliverWebhooks(h);
  const reset = parseLink(lastWebhookFor(h, "password_reset", email).body.resetLink!);
  for (const prefix of ["", "/ui"]) assertPage(await getPage(h, `${prefix}/reset-password/${reset.recordId}/${reset.token}`));
  assert.equal((await post(h, "/auth/reset-password", { ...reset, newPassword: "Another-Good-Pass-77" })).statusCode, 200, "the reset token was not used by the GETs");

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
  assertErrorSummary(body, /<a href="#password">The password needs at least 8 characters/);
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
  const cookie = await loginCookie("csrf@example.org");
  const change = await postForm(h, "/ui/change-password", { currentPassword: STRONG_PASSWORD, newPassword: "Attacker-Chosen-99" }, { cookie, origin: "https://evil.example.net" });
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
  const altcha = await createHarness({ domain: "altcha.example.com", settings: { botProtection: { provider: "altcha" } } });
  try {
    for (const url of ["/ui/register", "/ui/register-email-only", "/ui/login", "/ui/magic-link", "/ui/forgot-password", "/ui/resend-verification", "/verify-magic-link/123456789012345/abc"]) {
      const body = (await getPage(altcha, url)).body;
      assert.match(body, /<form method="post"[^>]*>[\s\S]*<altcha-widget challenge="\/auth\/bot-challenge" name="bot-challenge-response"[\s\S]*<\/form>/, url);
      assert.match(body, /<script type="module" src="\/ui\/assets\/altcha\.js"><\/script>/, url);
    }
    for (const url of ["/email-verified/123456789012345/abc", "/reset-password/123456789012345/abc"]) {
      assert.ok(!(await getPage(altcha, url)).body.includes("altcha-widget"), `${url} is not bot-guarded`);
    }
    // Without the widget's answer the flow's own check refuses, and the form comes back.
    const res = await postForm(altcha, "/ui/login", { email: "a@example.org", password: "Whatever-123" });
    assertErrorSummary(assertPage(res, 403), /Bot protection validation failed/);
    // The widget's answer, posted in the form's bot-challenge-response field, passes it.
    const challenge = (await getPage(altcha, "/auth/bot-challenge")).json<Challenge>();
    const solution = await solveChallenge({ challenge, deriveKey });
    const answer = Buffer.from(JSON.stringify({ challenge, solution })).toString("base64");
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
