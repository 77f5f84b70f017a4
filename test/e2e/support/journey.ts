/** Steps every browser journey takes: a checked page, a heading to wait for, a button pressed by keyboard, a session handed to the browser. */
import type { BrowserContext, Page } from "playwright-core";
import { expectNoSeriousA11yViolations } from "./a11y.js";
import { saveStep } from "./artifacts.js";
import type { DevServer } from "./dev-server.js";
import { activate, assertVisibleFocus, tabTo } from "./keyboard.js";

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
