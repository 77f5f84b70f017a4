/** Steps every browser journey takes: a checked page, a heading to wait for, a button pressed by keyboard, a session handed to the browser, a signed-in member's page. */
import type { TestContext } from "node:test";
import type { BrowserContext, Page } from "playwright-core";
import { expectNoSeriousA11yViolations } from "./a11y.js";
import { saveStep } from "./artifacts.js";
import type { PageOptions, TestPage } from "./browser.js";
import { signInDevMember, verifiedDevMember } from "./dev-api.js";
import type { DevServer } from "./dev-server.js";
import { activate, assertVisibleFocus, tabTo } from "./keyboard.js";
import type { E2eSuite } from "./suite.js";

/** A screenshot of the page as it is, which must pass axe-core with no serious violation. */
export async function step(page: Page, name: string): Promise<void> {
  await saveStep(page, name);
  await expectNoSeriousA11yViolations(page);
}

export async function heading(page: Page, name: string): Promise<void> {
  await page.getByRole("heading", { level: 1, name }).waitFor();
}

/** Tabs to the button (its focus must show) and presses Enter, as a keyboard user does. */
export async function pressButton(page: Page, name: string): Promise<void> {
  assertVisibleFocus(await tabTo(page, { role: "button", name }));
  await activate(page, "Enter");
}

/** Gives the browser a session made through the API, as the login page would have set it. */
export async function giveSessionCookie(context: BrowserContext, server: DevServer, cookie: string): Promise<void> {
  await context.addCookies([{ name: "session_id", value: cookie, url: server.baseURL, httpOnly: true, secure: true, sameSite: "Lax" }]);
}

/**
 * This test's page, signed in as a new verified member of the dev tenant (registered, confirmed and
 * logged in through the API, so only the pages under test are walked in the browser).
 */
export async function openSignedInPage(suite: E2eSuite, t: TestContext, member: { email: string; name: string }, options?: PageOptions): Promise<TestPage> {
  await verifiedDevMember(suite.server, member.email, member.name);
  const opened = await suite.openPage(t, options);
  await giveSessionCookie(opened.context, suite.server, await signInDevMember(suite.server, member.email));
  return opened;
}
