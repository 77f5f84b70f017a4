/**
 * The ALTCHA widget on the hosted pages, solved for real in Chromium: its proof of work runs in the
 * workers the page loads from /ui/assets under the page's CSP (worker-src 'self'), and the answer
 * lands in the form's hidden `bot-challenge-response` field. Nothing is stubbed: a CSP refusal, a
 * missing worker or a widget that never verifies fails here.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { activate, assertVisibleFocus, tabTo } from "./keyboard.js";

/** The widget's states (altcha README): its checkbox's accessible name follows them. */
export type AltchaState = "unverified" | "verifying" | "verified" | "expired" | "error" | "code";

/** The checkbox's accessible name in each state the test meets. */
const CHECKBOX_NAME = /^(I'm not a robot|Verifying\.\.\.|Verified)$/;
/** PBKDF2 at the production cost on a shared 2-core machine: a few seconds, sometimes more. */
const SOLVE_TIMEOUT_MS = 90_000;

interface AltchaPage {
  document: {
    querySelector(selector: string): { getState?: () => AltchaState; value?: string } | null;
  };
}

export async function readAltchaState(page: Page): Promise<AltchaState | null> {
  return page.evaluate(() => (globalThis as unknown as AltchaPage).document.querySelector("altcha-widget")?.getState?.() ?? null);
}

/**
 * Waits until the widget says verified and its answer is in the form's field; returns the answer's
 * length. The predicate is a function, not a string: a string would be eval'd, which the CSP refuses.
 */
async function waitForVerified(page: Page): Promise<number> {
  await page.waitForFunction(
    () => {
      const doc = (globalThis as unknown as AltchaPage).document;
      const response = doc.querySelector('input[name="bot-challenge-response"]')?.value ?? "";
      return doc.querySelector("altcha-widget")?.getState?.() === "verified" && response.length > 0;
    },
    undefined,
    { timeout: SOLVE_TIMEOUT_MS },
  );
  const length = await page.evaluate(
    () => (globalThis as unknown as AltchaPage).document.querySelector('input[name="bot-challenge-response"]')?.value?.length ?? 0,
  );
  assert.ok(length > 0, "the widget says verified but the form's bot-challenge-response field is empty");
  return length;
}

/**
 * Pointer path: clicks the widget's label (the checkbox itself sits under the tick's SVG, which
 * takes the click) unless keyboard focus in the form already started the proof of work, then waits.
 */
export async function solveAltchaWidget(page: Page): Promise<void> {
  const state = await readAltchaState(page);
  if (state !== "verifying" && state !== "verified") await page.locator("altcha-widget label").click();
  await waitForVerified(page);
}

/**
 * Keyboard path: Tab to the widget's checkbox (it must show visible focus). Focus entering the form
 * starts the proof of work (auto="onfocus"); if it has not started, Space starts it. Then waits.
 */
export async function solveAltchaByKeyboard(page: Page): Promise<void> {
  const focus = await tabTo(page, { role: "checkbox", name: CHECKBOX_NAME });
  assertVisibleFocus(focus);
  if ((await readAltchaState(page)) === "unverified") await activate(page, "Space");
  await waitForVerified(page);
}
