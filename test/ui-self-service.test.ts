/**
 * D24 in the hosted pages, without JavaScript (app.inject): the account page shows email and name;
 * name and email change by form; sessions are listed and signed out; the account is deleted after
 * re-authentication; the /email-change/ and /secure-account/ link pages use their token on POST only.
 * test/e2e/hosted-account.test.ts drives the same pages in Chromium with axe.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { member, signIn } from "./support/account.js";
import { deliverWebhooks, parseLink, STRONG_PASSWORD, type Harness } from "./support/harness.js";
import { lastWebhookFor, sessionStatus, WRONG_PASSWORD } from "./support/flows.js";
import { assertErrorSummary, assertPage, assertSeeOther, getPage, inputValue, postForm, signInOnPage } from "./support/ui-forms.js";

const EMAIL = "page.member@example.org";

/** A member signed in by the login form, on a tenant that sends security alerts. */
function setUp(t: { after(fn: () => Promise<void>): void }): Promise<{ h: Harness; recordId: string; cookie: string }> {
  return member(t, { email: EMAIL, events: false, signIn: signInOnPage });
}

test("D24 pages: the account shows email and name; the name and the email change by form; the email link's page changes nothing on GET", async (t) => {
  const { h, cookie } = await setUp(t);
  const account = assertPage(await getPage(h, "/ui/account", { cookie }));
  assert.match(account, /<dt>Email<\/dt><dd>page\.member@example\.org<\/dd>/);
  assert.match(account, /<dt>Name<\/dt><dd>Ada Lovelace<\/dd>/);
  for (const link of ["/ui/account/profile", "/ui/account/sessions", "/ui/account/delete"]) assert.ok(account.includes(`href="${link}"`), link);

  const blank = await postForm(h, "/ui/account/name", { name: " " }, { cookie });
  assertErrorSummary(assertPage(blank, 400), /Enter your name/);
  assertSeeOther(await postForm(h, "/ui/account/name", { name: "Ada <King>" }, { cookie }), "/ui/account?notice=name-changed");
  assert.match(assertPage(await getPage(h, "/ui/account?notice=name-changed", { cookie })), /<dd>Ada &lt;King&gt;<\/dd>/);

  const wrong = await postForm(h, "/ui/account/email", { newEmail: "new.address@example.net", password: WRONG_PASSWORD }, { cookie });
  const wrongBody = assertPage(wrong, 401);
  assertErrorSummary(wrongBody, /password is incorrect/);
  assert.match(wrongBody, /value="new\.address@example\.net"/, "the form keeps what was typed");
  assertSeeOther(
    await postForm(h, "/ui/account/email", { newEmail: "new.address@example.net", password: STRONG_PASSWORD }, { cookie }),
    "/ui/check-email?for=email-change",
  );
  assert.match(assertPage(await getPage(h, "/ui/check-email?for=email-change")), /works for 1 hour/);

  await deliverWebhooks(h);
  const link = parseLink(lastWebhookFor(h, "email_change", "new.address@example.net").body.verificationLink!);
  const path = `/email-change/${link.recordId}/${link.token}`;
  assert.match(assertPage(await getPage(h, path)), /Confirm my new email address/);
  assert.match(assertPage(await getPage(h, path)), /Confirm my new email address/, "a GET (a mail scanner) used nothing");
  assertSeeOther(await postForm(h, path, {}, { cookie }), "/ui/account?notice=email-changed");
  assert.match(assertPage(await getPage(h, "/ui/account", { cookie })), /<dd>new\.address@example\.net<\/dd>/, "the confirming browser stays signed in");
  const used = assertPage(await postForm(h, path, {}), 400);
  assertErrorSummary(used, /invalid or has expired/);
  assert.ok(!used.includes("Confirm my new email address"), "a used link shows no button");
});

test("D24 pages: sessions are listed and signed out one by one or all at once; the account is deleted after the password", async (t) => {
  const { h, cookie } = await setUp(t);
  const other = await signInOnPage(h, EMAIL);
  const third = await signInOnPage(h, EMAIL);
  // hosted-pages.md#readable-devices: a session is named by its browser and system, not its user-agent string.
  const chrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
  await signIn(h, EMAIL, STRONG_PASSWORD, chrome);
  const list = assertPage(await getPage(h, "/ui/account/sessions", { cookie }));
  assert.equal(list.match(/<li>\n<p><strong>/g)?.length, 4);
  assert.match(list, /<strong>Chrome on Linux<\/strong>/);
  assert.ok(!list.includes("AppleWebKit"), "the raw user-agent string is not shown when it is understood");
  assert.equal(list.match(/This browser/g)?.length, 1);
  const ids = [...list.matchAll(/name="id" value="([^"]+)"/g)].map((m) => m[1]!);
  assert.equal(ids.length, 3, "no sign-out button for this browser's own session");
  assert.ok(!list.includes(cookie) && !list.includes(other));

  assertSeeOther(await postForm(h, "/ui/account/sessions/revoke", { id: ids[0]! }, { cookie }), "/ui/account/sessions?notice=session-ended");
  assert.deepEqual([await sessionStatus(h, other), await sessionStatus(h, third)].sort(), [200, 401]);
  assertErrorSummary(assertPage(await postForm(h, "/ui/account/sessions/revoke", { id: ids[0]! }, { cookie }), 404), /already ended/);
  assertSeeOther(await postForm(h, "/ui/account/sessions/revoke-others", {}, { cookie }), "/ui/account/sessions?notice=other-sessions-ended");
  assert.deepEqual([await sessionStatus(h, other), await sessionStatus(h, third), await sessionStatus(h, cookie)], [401, 401, 200]);
  // A form post from another site is refused before it signs anything out.
  assert.equal((await postForm(h, "/ui/account/sessions/revoke-others", {}, { cookie, origin: "https://evil.example" })).statusCode, 403);

  assertErrorSummary(assertPage(await postForm(h, "/ui/account/delete", { password: WRONG_PASSWORD }, { cookie }), 401), /password is incorrect/);
  assert.equal(await sessionStatus(h, cookie), 200);
  const deleted = await postForm(h, "/ui/account/delete", { password: STRONG_PASSWORD }, { cookie });
  assertSeeOther(deleted, "/ui/login?notice=account-deleted");
  assert.match(String(deleted.headers["set-cookie"]), /session_id=;/);
  assert.equal(await h.db.selectFrom("members").select("id").where("email", "=", EMAIL).executeTakeFirst(), undefined);
});

test("D24 pages: this wasn't me, from a security alert's link: GET explains, POST secures the account once", async (t) => {
  const { h, recordId, cookie } = await setUp(t);
  assertSeeOther(
    await postForm(h, "/ui/change-password", { currentPassword: STRONG_PASSWORD, newPassword: "Another-Strong-Pass-77" }, { cookie }),
    "/ui/account?notice=password-changed",
  );
  await deliverWebhooks(h);
  const alert = h.receiver.ofType("security_alert").at(-1)!;
  const link = parseLink(alert.body.secureAccountLink!);
  const path = `/secure-account/${link.recordId}/${link.token}`;
  assert.match(assertPage(await getPage(h, path)), /Secure my account/);
  assert.equal(await sessionStatus(h, cookie), 200, "the GET changed nothing");
  const secured = await postForm(h, path, {}, { cookie });
  assertSeeOther(secured, "/ui/forgot-password?notice=account-secured");
  assert.equal(await sessionStatus(h, cookie), 401);
  // Issue 34: the page it lands on says what happened and fills in the address the account has now.
  const remembered = secured.cookies.find((c) => c.name === "login_email");
  assert.equal(remembered?.path, "/ui/forgot-password");
  assert.equal(decodeURIComponent(remembered?.value ?? ""), EMAIL);
  const landing = assertPage(await getPage(h, "/ui/forgot-password?notice=account-secured", { cookies: { login_email: EMAIL } }));
  assert.match(landing, /Your account is secured/);
  assert.equal(inputValue(landing, "email"), EMAIL);
  const row = await h.db.selectFrom("members").select("status").where("id", "=", Number(recordId)).executeTakeFirstOrThrow();
  assert.equal(row.status, "Password Change Pending");
  assertErrorSummary(assertPage(await postForm(h, path, {}), 400), /invalid or has expired/);
});
