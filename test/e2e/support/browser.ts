/**
 * Debian's Chromium driven by playwright-core (issue 7). Playwright's own browser download fails on
 * a closed network, so the browser is the system one, installed by .ci/run; without it the suite
 * fails and says how to install it, never skips. One browser per suite (a file), one context per
 * test, so tests share no cookies or storage.
 */
import { existsSync } from "node:fs";
import type { TestContext } from "node:test";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { watchPageProblems, type PageProblems } from "./problems.js";

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

/**
 * What the machine notes found to work as root on a closed network. Without the background and
 * component flags Chromium keeps trying to reach Google's hosts. Playwright itself adds --headless
 * and a fresh empty --user-data-dir in the temp folder, which it removes when the browser closes.
 */
export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Throws, saying how to install it, when there is no Chromium at CHROMIUM_PATH. */
export function requireChromium(): string {
  if (existsSync(CHROMIUM_PATH)) return CHROMIUM_PATH;
  throw new Error(
    `The browser suite needs Chromium at ${CHROMIUM_PATH} and there is none.\n` +
      "Install Debian's package (.ci/run does this):\n" +
      "  sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium\n" +
      "or point CHROMIUM_PATH at another Chromium 156 binary. `npx playwright install` is not used: it downloads a browser.",
  );
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: requireChromium(), headless: true, args: CHROMIUM_ARGS, timeout: 60_000 });
}

export interface PageOptions {
  /** False: the page as a browser without JavaScript gets it (the no-JavaScript forms). */
  javaScriptEnabled?: boolean;
}

export interface TestPage {
  context: BrowserContext;
  page: Page;
  problems: PageProblems;
}

/**
 * A fresh context and page for one test. When the test ends the context closes, and the test fails
 * if the page logged a console error, threw, or violated its CSP (see problems.ts).
 */
export async function openTestPage(t: TestContext, browser: Browser, baseURL: string, options: PageOptions = {}): Promise<TestPage> {
  const context = await browser.newContext({
    baseURL,
    javaScriptEnabled: options.javaScriptEnabled ?? true,
    viewport: { width: 1280, height: 800 },
    locale: "en-GB",
    colorScheme: "light",
    reducedMotion: "reduce",
  });
  context.setDefaultTimeout(15_000);
  const problems = await watchPageProblems(context);
  const page = await context.newPage();
  t.after(async () => {
    await context.close();
    problems.assertNone();
  });
  return { context, page, problems };
}
