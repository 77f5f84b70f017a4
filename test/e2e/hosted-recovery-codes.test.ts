/**
 * Issue 16's recovery-code list on a phone, in a real headless Chromium against Latch in dev mode:
 * the list shown after turning 2FA on and after getting new codes, at 360 and 320 CSS pixels wide.
 * Measured, not eyeballed: nothing is wider than the viewport (no sideways scroll), each code's text
 * sits on one line, and each number's box ends before its code's begins, on the same line. Both
 * pages pass axe-core; screenshots go to test-artifacts/e2e/hosted-recovery-codes/.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Page } from "playwright-core";
import type { PageBox as Box } from "./support/dom.js";
import { openSignedInPage, pressButton, step } from "./support/journey.js";
import { useE2eSuite } from "./support/suite.js";
import { readRecoveryCodes, turnOnTwoFactorByPages } from "./support/two-factor.js";

const suite = useE2eSuite("hosted-recovery-codes");
const PHONE_WIDTHS = [360, 320];
/** The number and its code must not touch: at least this many pixels between them. */
const MIN_GAP_PX = 4;

interface CodeRow {
  text: string;
  number: Box | null;
  codeLines: Box[];
}
interface ListLayout {
  viewport: number;
  scrollWidth: number;
  tooWide: string[];
  rows: CodeRow[];
}

/** The DOM this test reads in the page (the project's tsconfig has no DOM lib; see support/dom.ts). */
interface LayoutPage {
  innerWidth: number;
  document: {
    documentElement: { scrollWidth: number };
    createRange(): { selectNodeContents(node: unknown): void; getClientRects(): ArrayLike<Box> };
    querySelectorAll(selector: string): ArrayLike<{
      tagName: string;
      className: string;
      textContent: string | null;
      closest(selector: string): unknown;
      querySelector(selector: string): { getBoundingClientRect(): Box; textContent: string | null } | null;
      getBoundingClientRect(): Box;
    }>;
  };
}

async function measureCodeList(page: Page): Promise<ListLayout> {
  return page.evaluate(() => {
    const { document, innerWidth } = globalThis as unknown as LayoutPage;
    const tooWide: string[] = [];
    for (const element of Array.from(document.querySelectorAll("body *"))) {
      // The skip link waits off-screen on purpose, and visually hidden text is a 1 px box.
      if (element.closest(".skip, .visually-hidden, script, style, head")) continue;
      const box = element.getBoundingClientRect();
      if (box.width === 0) continue;
      if (box.left < -0.5 || box.right > innerWidth + 0.5)
        tooWide.push(`${element.tagName.toLowerCase()}.${element.className} ${Math.round(box.left)}..${Math.round(box.right)}`);
    }
    const rows = Array.from(document.querySelectorAll("ol.codes li")).map((item) => {
      const code = item.querySelector("code")!;
      const range = document.createRange();
      range.selectNodeContents(code);
      return {
        text: code.textContent ?? "",
        number: item.querySelector(".code-number")?.getBoundingClientRect() ?? null,
        codeLines: Array.from(range.getClientRects()),
      };
    });
    return { viewport: innerWidth, scrollWidth: document.documentElement.scrollWidth, tooWide, rows };
  });
}

function assertCodeListFits(layout: ListLayout, codes: string[]): void {
  const at = `at ${layout.viewport} px`;
  assert.ok(layout.scrollWidth <= layout.viewport, `no sideways scroll ${at} (page is ${layout.scrollWidth} px wide)`);
  assert.deepEqual(layout.tooWide, [], `every element within the viewport ${at}`);
  assert.deepEqual(
    layout.rows.map((r) => r.text),
    codes,
    "the list shows the codes",
  );
  for (const [i, row] of layout.rows.entries()) {
    const lineTops = new Set(row.codeLines.map((line) => Math.round(line.top)));
    assert.equal(lineTops.size, 1, `code ${i + 1} (${row.text}) is on one line ${at}, not ${lineTops.size}`);
    const code = row.codeLines[0]!;
    const left = Math.min(...row.codeLines.map((line) => line.left));
    assert.ok(row.number && row.number.width > 0, `code ${i + 1} has its number shown, in its own box`);
    assert.ok(
      row.number.right + MIN_GAP_PX <= left,
      `number ${i + 1} ends (${row.number.right}) at least ${MIN_GAP_PX} px before its code starts (${left}) ${at}`,
    );
    assert.ok(row.number.top < code.bottom && code.top < row.number.bottom, `number ${i + 1} is on its code's line ${at}`);
  }
}

async function checkOnPhones(page: Page, codes: string[], name: string): Promise<void> {
  for (const width of PHONE_WIDTHS) {
    await page.setViewportSize({ width, height: 800 });
    assertCodeListFits(await measureCodeList(page), codes);
    await step(page, `${name} at ${width} px`);
  }
}

test(
  "the recovery codes fit a 360 and a 320 px phone screen: one line per code, numbers beside them, no sideways scroll; after enabling 2FA and after new codes",
  { timeout: 120_000 },
  async (t) => {
    const { page } = await openSignedInPage(suite, t, { email: "dorothy.vaughan@example.org", name: "Dorothy Vaughan" });
    await page.setViewportSize({ width: 360, height: 800 });
    const { codes } = await turnOnTwoFactorByPages(page);
    assert.equal(codes.length, 10);
    assert.ok(
      codes.every((c) => /^[a-z0-9]{4}(-[a-z0-9]{4}){3}$/.test(c)),
      "the codes alone, without their numbers",
    );
    await checkOnPhones(page, codes, "recovery codes after enabling");

    // New codes, confirmed with one of the old ones (the TOTP's time step is spent).
    await page.setViewportSize({ width: 360, height: 800 });
    await page.goto("/ui/two-factor");
    await page.getByRole("textbox", { name: "Code from your authenticator app" }).fill(codes[0]!);
    await pressButton(page, "Get new recovery codes");
    const newCodes = await readRecoveryCodes(page);
    assert.equal(newCodes.length, 10);
    await page.getByText("You have new recovery codes. Your old ones no longer work.").waitFor();
    await checkOnPhones(page, newCodes, "new recovery codes");
  },
);
