/**
 * ALTCHA solve time: how long the hosted pages' widget takes to solve Latch's challenge in headless
 * Chromium on this machine (contract.md#issue-16: the docs said "about a second", a member measured 5–7 s).
 *
 *   npm run build:ui && node --import tsx bench/altcha-solve.ts [solves]
 *
 * Starts Latch in dev mode (the e2e suite's dev server: the `localhost` tenant on ALTCHA, the
 * production difficulty of src/providers/altcha.ts), opens /ui/magic-link in Debian's Chromium and
 * runs the page's own widget `solves` times (default 9): verify(), timed in the page from the call
 * to the answer (the challenge fetch included, as a member waits for it), then reset(). The widget
 * uses its default worker count, navigator.hardwareConcurrency. Prints one JSON line: each solve's
 * milliseconds and counter (the attempts the workers made between them), the median, and the load
 * average before and after, since other work on the machine slows the workers.
 */
import { loadavg } from "node:os";
import { launchBrowser } from "../test/e2e/support/browser.js";
import { startDevServer } from "../test/e2e/support/dev-server.js";

interface SolvePage {
  navigator: { hardwareConcurrency: number };
  performance: { now(): number };
  atob(data: string): string;
  document: { querySelector(selector: string): { verify(): Promise<{ payload: string } | null>; reset(): void } | null };
}

const solves = Number(process.argv[2] ?? 9);
if (!Number.isInteger(solves) || solves < 1) {
  console.error("usage: node --import tsx bench/altcha-solve.ts [solves]");
  process.exit(2);
}

const loadBefore = loadavg();
const server = await startDevServer();
const browser = await launchBrowser();
try {
  const page = await browser.newPage({ baseURL: server.baseURL });
  await page.goto("/ui/magic-link");
  await page.waitForFunction(() => typeof (globalThis as unknown as SolvePage).document.querySelector("altcha-widget")?.verify === "function");
  const workers = await page.evaluate(() => (globalThis as unknown as SolvePage).navigator.hardwareConcurrency);
  const results: { ms: number; counter: number }[] = [];
  for (let i = 0; i < solves; i++) {
    results.push(
      await page.evaluate(async () => {
        const { document, performance, atob } = globalThis as unknown as SolvePage;
        const widget = document.querySelector("altcha-widget")!;
        const startedAt = performance.now();
        const answer = await widget.verify();
        const ms = Math.round(performance.now() - startedAt);
        widget.reset();
        if (!answer) throw new Error("the widget found no solution");
        const counter = (JSON.parse(atob(answer.payload)) as { solution: { counter: number } }).solution.counter;
        return { ms, counter };
      }),
    );
  }
  const sorted = results.map((r) => r.ms).sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      medianMs: sorted[Math.floor(sorted.length / 2)],
      minMs: sorted[0],
      maxMs: sorted.at(-1),
      workers,
      solves: results,
      loadAverage1m: { before: loadBefore[0], after: loadavg()[0] },
    }),
  );
} finally {
  await browser.close();
  await server.stop();
}
