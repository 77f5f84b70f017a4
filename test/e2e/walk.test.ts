/**
 * Issue 34: the main journeys walked in Chromium at a phone's width (390 px) and at a desktop's
 * (1280 px), one PNG per page kept as an artefact at test-artifacts/screenshots/<width>/<page>.png
 * (docs/testing.md#artefacts): register, check your email, the verification link, login (the
 * address just confirmed filled in), the login link, account, profile, sessions, passkeys (one added
 * with a virtual authenticator, its rename disclosure opened), password, 2FA set-up to the recovery
 * codes, log out, forgot password and the reset link. Every page must have no axe violation of any
 * impact and, at 390 px, no sideways scrolling. The bot checks are solved by the API helpers where a
 * form needs one (the widget itself is hosted-flow.test.ts's); every other step is the page's own form.
 */
import assert from "node:assert/strict";
import { mkdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { test } from "node:test";
import type { Page } from "playwright-core";
import { totpAt } from "../support/totp.js";
import { describeViolations, findA11yViolations } from "./support/a11y.js";
import { callApi, E2E_PASSWORD, registerDevMember, signInDevMember, solveBotChallenge, waitForEmail } from "./support/dev-api.js";
import { giveSessionCookie, heading } from "./support/journey.js";
import { useE2eSuite } from "./support/suite.js";
import { addVirtualAuthenticator } from "./support/webauthn.js";

const suite = useE2eSuite("walk");
const WALK_TIMEOUT = { timeout: 300_000 };
export const SCREENSHOTS_ROOT = resolve("test-artifacts", "screenshots");
const WIDTHS = [
  { width: 390, height: 844 },
  { width: 1280, height: 800 },
];

interface LayoutPage {
  document: { documentElement: { scrollWidth: number; clientWidth: number } };
}

/** The page as it is: its PNG at <width>/<name>.png, axe with nothing to say, and (on a phone) nothing wider than the screen. */
async function shoot(page: Page, dir: string, name: string): Promise<void> {
  await page.screenshot({ path: join(dir, `${name}.png`), fullPage: true, animations: "disabled" });
  const violations = await findA11yViolations(page);
  assert.equal(violations.length, 0, `axe-core on ${name} (${page.url()}):\n${describeViolations(violations)}`);
  const [scrollWidth, clientWidth] = await page.evaluate(() => {
    const root = (globalThis as unknown as LayoutPage).document.documentElement;
    return [root.scrollWidth, root.clientWidth];
  });
  assert.ok(scrollWidth <= clientWidth, `${name} scrolls sideways: ${scrollWidth} px of content in ${clientWidth} px`);
}

for (const viewport of WIDTHS) {
  test(`the main journeys at ${viewport.width} px, a screenshot of each page`, WALK_TIMEOUT, async (t) => {
    const dir = join(SCREENSHOTS_ROOT, String(viewport.width));
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const email = `walker.${viewport.width}@example.org`;
    const { context, page } = await suite.openPage(t);
    await page.setViewportSize(viewport);
    const cdp = await context.newCDPSession(page);
    const authenticatorId = await addVirtualAuthenticator(cdp);

    // Register (the form; the account is made through the API, with the bot check solved in Node).
    await page.goto("/ui/register");
    await heading(page, "Register");
    await shoot(page, dir, "register");
    await page.goto("/ui/register-email-only");
    await shoot(page, dir, "register-email-only");
    await registerDevMember(suite.server, email, "Walker Member");
    await page.goto("/ui/check-email?for=registration");
    await heading(page, "Check your email");
    await shoot(page, dir, "check-email");

    // Verify by the link's page, then the login page holds the address just confirmed.
    await page.goto((await waitForEmail(suite.server, "verify_email", email)).link!);
    await heading(page, "Confirm your email address");
    await shoot(page, dir, "verify-email");
    await page.getByRole("button", { name: "Confirm email address" }).click();
    await page.waitForURL(/\/ui\/login\?notice=email-verified$/);
    assert.equal(await page.getByRole("textbox", { name: "Email address" }).inputValue(), email, "the login page fills in the address just confirmed");
    await shoot(page, dir, "login");
    await page.goto("/ui/magic-link");
    await shoot(page, dir, "magic-link");
    await page.goto("/ui/resend-verification");
    await shoot(page, dir, "resend-verification");

    // Signed in (the login's bot check through the API): account, profile, sessions.
    await giveSessionCookie(context, suite.server, await signInDevMember(suite.server, email));
    await page.goto("/ui/account");
    await heading(page, "Your account");
    await shoot(page, dir, "account");
    await page.goto("/ui/account/profile");
    await shoot(page, dir, "profile");
    await page.goto("/ui/account/sessions");
    await heading(page, "Where you are signed in");
    await shoot(page, dir, "sessions");

    // Passkeys: none, then one added by the browser's own ceremony, then its rename disclosure open.
    await page.goto("/ui/account/passkeys");
    await heading(page, "Passkeys");
    await shoot(page, dir, "passkeys-none");
    await page.getByLabel("Name (optional)").fill("Walker's phone");
    await page.getByLabel("Your password").fill(E2E_PASSWORD);
    await page.getByRole("button", { name: "Add a passkey" }).click();
    await page.waitForURL(/\/ui\/account\/passkeys\?notice=passkey-added$/);
    await shoot(page, dir, "passkeys");
    assert.equal(await page.getByLabel("New name for Walker's phone").isVisible(), false, "the rename field waits behind its disclosure");
    await page.locator("details.rename > summary").click();
    await page.getByLabel("New name for Walker's phone").waitFor();
    await shoot(page, dir, "passkeys-rename");
    // Out of the browser again: the login pages after logging out would otherwise sign the walker in by
    // passkey autofill as they load, and that navigation aborted the walk's next page.goto (seen at 390 px).
    await cdp.send("WebAuthn.removeVirtualAuthenticator", { authenticatorId });

    await page.goto("/ui/change-password");
    await shoot(page, dir, "change-password");

    // Two-factor set-up: the password, the QR code and key, the first code, the recovery codes.
    await page.goto("/ui/two-factor");
    await heading(page, "Two-factor authentication");
    await shoot(page, dir, "two-factor-off");
    await page.getByLabel("Password").fill(E2E_PASSWORD);
    await page.getByRole("button", { name: "Set up two-factor authentication" }).click();
    await heading(page, "Set up two-factor authentication");
    await shoot(page, dir, "two-factor-setup");
    const secret = (await page.locator("#totp-secret").innerText()).trim();
    await page.getByLabel("Code from your authenticator app").fill(totpAt(secret, Date.now()));
    await page.getByRole("button", { name: "Turn on two-factor authentication" }).click();
    await heading(page, "Save your recovery codes");
    await shoot(page, dir, "recovery-codes");
    await page.goto("/ui/two-factor");
    await shoot(page, dir, "two-factor-on");

    // Log out, then forgot password and the reset link's page.
    await page.goto("/ui/account");
    await page.getByRole("button", { name: "Log out" }).click();
    await page.waitForURL(/\/ui\/login\?notice=logged-out$/);
    await shoot(page, dir, "logged-out");
    await page.goto("/ui/forgot-password");
    await shoot(page, dir, "forgot-password");
    const requested = await callApi(suite.server, "POST", "/auth/forgot-password", { email, "bot-challenge-response": await solveBotChallenge(suite.server) });
    assert.equal(requested.status, 200, await requested.text());
    await page.goto("/ui/check-email?for=reset");
    await shoot(page, dir, "check-email-reset");
    await page.goto((await waitForEmail(suite.server, "password_reset", email)).link!);
    await heading(page, "Set a new password");
    await shoot(page, dir, "reset-password");
    await page.getByLabel("New password").fill("Walked-All-The-Way-1842");
    await page.getByRole("button", { name: "Set new password" }).click();
    await page.waitForURL(/\/ui\/login\?notice=password-reset$/);
    await shoot(page, dir, "login-after-reset");
  });
}
