/**
 * Issue 34 in Chromium with JavaScript (the script sends the forms through the API): a refusal says
 * why, for how long and what can be done now (hosted-pages.md#refusals); the 2FA step leaves the
 * first step's notice and fields behind; Back from the recovery codes asks to resend nothing and
 * shows no code again (hosted-pages.md#recovery-codes-once), nor, further back, the 2FA key
 * (hosted-pages.md#two-factor-setup-by-get). The same pages without JavaScript are
 * in test/ui-refusals.test.ts (the dev tenant's ALTCHA needs JavaScript). Screenshots go to
 * test-artifacts/e2e/refusals/.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Page } from "playwright-core";
import { solveAltchaWidget } from "./support/altcha.js";
import { E2E_PASSWORD, verifiedDevMemberWithTwoFactor } from "./support/dev-api.js";
import { heading, openSignedInPage, step } from "./support/journey.js";
import { useE2eSuite } from "./support/suite.js";
import { turnOnTwoFactorByPages } from "./support/two-factor.js";

const suite = useE2eSuite("refusals");
const TIMEOUT = { timeout: 180_000 };
const REFUSED = /Failed to load resource: the server responded with a status of 429/;

async function submitWithBotCheck(page: Page, button: string): Promise<void> {
  await solveAltchaWidget(page);
  await page.getByRole("button", { name: button }).click();
}

async function errorSummaryText(page: Page): Promise<string> {
  const summary = page.locator("#error-summary");
  await summary.waitFor({ state: "visible" });
  return (await summary.innerText()).replace(/\s+/g, " ");
}

test("the magic link's cooldown with JavaScript: a link was sent, the wait in words, and the code form for that address", TIMEOUT, async (t) => {
  const { page, problems } = await suite.openPage(t);
  problems.allow(REFUSED);
  const email = "katherine.johnson@example.org";
  await page.goto("/ui/magic-link");
  await page.getByLabel("Email address").fill(email);
  await submitWithBotCheck(page, "Email me a login link");
  await page.waitForURL(/\/ui\/check-email\?for=magic-link$/);
  // "Request a new login link" no longer leads straight into the cooldown unannounced.
  assert.match(await page.locator("main").innerText(), /you can ask for another link after 3 minutes/);
  await step(page, "check your email says when another link can be asked");

  await page.goto("/ui/magic-link");
  await page.getByLabel("Email address").fill(email);
  await submitWithBotCheck(page, "Email me a login link");
  const text = await errorSummaryText(page);
  assert.match(text, /a login link was sent to it in the last few minutes/);
  assert.match(text, /You can ask for another link in about 3 minutes\./);
  assert.doesNotMatch(text, /Please try again later/);
  await step(page, "magic link cooldown refusal");

  await page.getByRole("link", { name: "Enter the 6-digit code from the email" }).click();
  await page.waitForURL(/\/ui\/check-email\?for=magic-link$/);
  assert.match(await page.locator("main").innerText(), new RegExp(`Email address: ${email.replace(/\./g, "\\.")}`), "the code form knows the address");
});

test("a password lockout with JavaScript: the reason, the wait in words, and the login link offered", TIMEOUT, async (t) => {
  const { page, problems } = await suite.openPage(t);
  problems.allow(REFUSED);
  problems.allow(/Failed to load resource: the server responded with a status of 401/);
  await page.goto("/ui/login");
  await page.getByLabel("Email address").fill("nobody.here@example.org");
  for (let attempt = 1; attempt <= 4; attempt++) {
    await page.getByLabel("Password").fill("Not-The-Password-1");
    await submitWithBotCheck(page, "Log in");
    const text = await errorSummaryText(page);
    if (attempt < 4) {
      assert.doesNotMatch(text, /paused/);
      await page.locator("#error-summary").evaluate((e) => e.setAttribute("hidden", ""));
      continue;
    }
    assert.match(text, /Too many failed password attempts for this email address: logging in with a password is paused for about an hour\./);
    assert.doesNotMatch(text, /Please try again later/);
  }
  await step(page, "password lockout refusal");
  await page.locator("#error-summary").getByRole("link", { name: "Email me a login link instead" }).click();
  await heading(page, "Email me a login link");
});

test("the 2FA step with JavaScript leaves the old notice and the email and password fields behind", TIMEOUT, async (t) => {
  const email = "mary.jackson@example.org";
  await verifiedDevMemberWithTwoFactor(suite.server, email, "Mary Jackson");
  const { page } = await suite.openPage(t);
  await page.goto("/ui/login?notice=logged-out");
  assert.equal(await page.locator("main .notice").count(), 1);
  await page.getByLabel("Email address").fill(email);
  await page.getByLabel("Password").fill(E2E_PASSWORD);
  await submitWithBotCheck(page, "Log in");
  await page.getByRole("textbox", { name: "Authentication code" }).waitFor();
  assert.equal(await page.locator("main .notice").count(), 0, "no 'You have been logged out' on the code step");
  assert.equal(await page.getByLabel("Email address").isVisible(), false, "no email field on the code step");
  assert.equal(await page.getByLabel("Password", { exact: true }).isVisible(), false, "no password field on the code step");
  await heading(page, "Enter your authentication code");
  await step(page, "two factor step with javascript");
});

test("Back from the recovery codes: no form-resubmission page, and the codes are not shown again", TIMEOUT, async (t) => {
  const { page } = await openSignedInPage(suite, t, { email: "christine.darden@example.org", name: "Christine Darden" });
  const { codes } = await turnOnTwoFactorByPages(page);
  assert.equal(new URL(page.url()).pathname, "/ui/two-factor/recovery-codes", "the codes' page is a GET (post, redirect, get)");
  assert.equal(codes.length, 10);
  assert.ok(codes.every((code) => !page.url().includes(code)));

  await page.getByRole("link", { name: /continue to your account/ }).click();
  await heading(page, "Your account");
  const back = await page.goBack();
  assert.equal(back?.status(), 200, "Back loads the page again, without asking to send a form");
  await heading(page, "Recovery codes already shown");
  const main = await page.locator("main").innerText();
  assert.ok(
    codes.every((code) => !main.includes(code)),
    "no code is shown again",
  );
  await step(page, "back from the recovery codes");
  await page.getByRole("link", { name: "Get new recovery codes" }).click();
  await heading(page, "Two-factor authentication");
});

test(
  "Back twice from the recovery codes: the set-up page was a GET, so nothing asks to be resent, and with 2FA on no key is shown again",
  TIMEOUT,
  async (t) => {
    // hosted-pages.md#two-factor-setup-by-get: before it, the first Back landed on the set-up POST's answer (the resubmission page).
    const { page } = await openSignedInPage(suite, t, { email: "annie.easley@example.org", name: "Annie Easley" });
    const { secret, codes } = await turnOnTwoFactorByPages(page);
    for (const back of ["set-up page", "page set-up started from"]) {
      const response = await page.goBack();
      assert.equal(response?.status(), 200, `Back to the ${back} loads a page, without asking to send a form`);
      await heading(page, "Two-factor authentication");
      assert.equal(new URL(page.url()).pathname, "/ui/two-factor");
      const main = await page.locator("main").innerText();
      assert.match(main, /Two-factor authentication is on\./);
      assert.equal(await page.locator("#totp-secret").count(), 0, `no key on the ${back}`);
      assert.ok(!main.includes(secret) && codes.every((code) => !main.includes(code)), `neither the key nor a code on the ${back}`);
    }
    await step(page, "back twice from the recovery codes");
  },
);

// Last: it spends this address's registrations for the hour (the tests above register through the API from it too).
test("dev mode refuses a registration past the limit with JavaScript: the limits, the wait, and the setting that lifts them", TIMEOUT, async (t) => {
  const { page, problems } = await suite.openPage(t);
  problems.allow(REFUSED);
  let text = "";
  for (let i = 0; i < 6 && !text; i++) {
    await page.goto("/ui/register-email-only");
    await page.getByLabel("Name").fill("Dorothy Test");
    await page.getByLabel("Email address").fill(`dev.limit.${i}@example.org`);
    await submitWithBotCheck(page, "Register");
    // Whichever comes first; the other wait is dropped (its later timeout is caught, not left unhandled).
    const sent = page.waitForURL(/\/ui\/check-email\?for=registration$/).then(() => "sent" as const);
    const refused = page
      .locator("#error-summary")
      .waitFor({ state: "visible" })
      .then(() => "refused" as const);
    for (const wait of [sent, refused]) wait.catch(() => undefined);
    const landed = await Promise.race([sent, refused]);
    if (landed === "refused") text = await errorSummaryText(page);
  }
  assert.match(text, /at most 5 an hour from one network and 3 for one address\. You can register again in about an hour\./);
  assert.match(text, /Dev mode: these are Latch's request limits; restart the server with RATE_LIMITS=off to lift them/);
  await step(page, "dev mode registration refusal");
});
