/** Two-factor enrolment on the hosted pages, as a member does it with an authenticator app (the key typed in, the code computed). */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { totpAt } from "../../support/totp.js";
import { E2E_PASSWORD } from "./dev-api.js";
import { heading, pressButton } from "./journey.js";

/** The codes of the "Save your recovery codes" page (after turning 2FA on, or after new codes), each without its number. */
export async function readRecoveryCodes(page: Page): Promise<string[]> {
  await heading(page, "Save your recovery codes");
  return (await page.getByRole("list", { name: "Recovery codes" }).locator("code").allInnerTexts()).map((c) => c.trim());
}

/**
 * Turns 2FA on from /ui/two-factor for the signed-in member of `page` (a dev member with E2E_PASSWORD):
 * the password (D30: turning it on re-authenticates, at this first step), the key from the set-up
 * page, its first code. Ends on the recovery codes' page; returns the key and the codes.
 */
export async function turnOnTwoFactorByPages(page: Page): Promise<{ secret: string; codes: string[] }> {
  await page.goto("/ui/two-factor");
  await page.getByLabel("Password").fill(E2E_PASSWORD);
  await pressButton(page, "Set up two-factor authentication");
  await heading(page, "Set up two-factor authentication");
  const secret = (await page.locator("#totp-secret").innerText()).trim();
  assert.ok(!page.url().includes(secret), "the key is never in the address");
  await page.getByRole("textbox", { name: "Code from your authenticator app" }).fill(totpAt(secret, Date.now()));
  await pressButton(page, "Turn on two-factor authentication");
  return { secret, codes: await readRecoveryCodes(page) };
}
