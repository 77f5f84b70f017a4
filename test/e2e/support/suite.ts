/**
 * One browser suite = one test file: its artefact folder emptied, Debian's Chromium launched and
 * Latch started in dev mode once for the file; each test gets its own browser context. Call
 * useE2eSuite at the top of the file, before the tests.
 */
import { after, before, type TestContext } from "node:test";
import type { Browser } from "playwright-core";
import { startArtifacts } from "./artifacts.js";
import { launchBrowser, openTestPage, requireChromium, type PageOptions, type TestPage } from "./browser.js";
import { startDevServer, type DevServer } from "./dev-server.js";

export interface E2eSuite {
  readonly browser: Browser;
  readonly server: DevServer;
  /** A new context and page for this test, at the dev server's origin; closed, and checked for page problems, when the test ends. */
  openPage(t: TestContext, options?: PageOptions): Promise<TestPage>;
}

export function useE2eSuite(name: string): E2eSuite {
  // Checked when the file loads, so a missing browser fails every test with the install hint.
  requireChromium();
  let browser: Browser | undefined;
  let server: DevServer | undefined;
  before(
    async () => {
      startArtifacts(name);
      // Both are awaited before failing, so after() can close whichever one did start.
      const results = await Promise.allSettled([launchBrowser().then((b) => (browser = b)), startDevServer().then((s) => (server = s))]);
      const failed = results.find((r) => r.status === "rejected");
      if (failed) throw failed.reason;
    },
    { timeout: 120_000 },
  );
  after(async () => {
    await browser?.close();
    await server?.stop();
  });
  const ready = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`the suite's ${what} is not up: it starts in before()`);
    return value;
  };
  return {
    get browser() {
      return ready(browser, "browser");
    },
    get server() {
      return ready(server, "dev server");
    },
    openPage: (t, options) => openTestPage(t, ready(browser, "browser"), ready(server, "dev server").baseURL, options),
  };
}
