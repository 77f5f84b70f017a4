/**
 * Issue 34, item 1 (docs/hosted-pages.md#mobile-layout): under 480 px every label sits above its
 * value. At 390 px the account page squeezed its values into a 60 px column beside the labels
 * ("ada@ex / ample.o / rg"). Measured in Chromium: each value's box against the content's width, the
 * email on one line, labels above values, no sideways scrolling; axe finds nothing at either width.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Page } from "playwright-core";
import { findA11yViolations, describeViolations } from "./support/a11y.js";
import { saveStep } from "./support/artifacts.js";
import type { PageBox as Box } from "./support/dom.js";
import { heading, openSignedInPage } from "./support/journey.js";
import { useE2eSuite } from "./support/suite.js";

const suite = useE2eSuite("mobile-layout");
const FLOW_TIMEOUT = { timeout: 180_000 };
export const PHONE = { width: 390, height: 844 };
export const DESKTOP = { width: 1280, height: 800 };

interface Term {
  term: string;
  dt: Box;
  dd: Box;
  ddLineHeight: number;
}
interface MeasuredPage {
  document: {
    querySelector(selector: string): MeasuredElement | null;
    querySelectorAll(selector: string): MeasuredElement[];
    documentElement: { scrollWidth: number; clientWidth: number };
  };
  getComputedStyle(element: MeasuredElement): { lineHeight: string; paddingLeft: string; paddingRight: string };
}
interface MeasuredElement {
  textContent: string | null;
  clientWidth: number;
  getBoundingClientRect(): Box;
}

/** Each dt/dd pair of the page's description list, with their boxes; and the content's width (main's, less its padding). */
async function measure(page: Page): Promise<{ contentWidth: number; terms: Term[]; scrollWidth: number; viewport: number }> {
  return page.evaluate(() => {
    const w = globalThis as unknown as MeasuredPage;
    const main = w.document.querySelector("main")!;
    const style = w.getComputedStyle(main);
    const contentWidth = main.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const dts = w.document.querySelectorAll("main dl dt");
    const dds = w.document.querySelectorAll("main dl dd");
    const terms: Term[] = [];
    for (let i = 0; i < dts.length; i++) {
      const dd = dds[i]!;
      terms.push({
        term: dts[i]!.textContent ?? "",
        dt: dts[i]!.getBoundingClientRect(),
        dd: dd.getBoundingClientRect(),
        ddLineHeight: parseFloat(w.getComputedStyle(dd).lineHeight),
      });
    }
    return { contentWidth, terms, scrollWidth: w.document.documentElement.scrollWidth, viewport: w.document.documentElement.clientWidth };
  });
}

async function assertNoA11yViolations(page: Page, where: string): Promise<void> {
  const violations = await findA11yViolations(page);
  assert.equal(violations.length, 0, `axe-core at ${where}:\n${describeViolations(violations)}`);
}

test(
  "at 390 px the account page puts each label above its value, at the content's width, the email on one line; desktop keeps two columns",
  FLOW_TIMEOUT,
  async (t) => {
    const { page } = await openSignedInPage(suite, t, { email: "ada.lovelace@example.org", name: "Ada Lovelace" });

    await page.setViewportSize(PHONE);
    await page.goto("/ui/account");
    await heading(page, "Your account");
    await saveStep(page, "account at 390 px");
    const phone = await measure(page);
    assert.ok(phone.terms.length >= 5, `the account page lists its facts (${phone.terms.length})`);
    assert.ok(phone.scrollWidth <= phone.viewport, `no sideways scrolling at 390 px (${phone.scrollWidth} > ${phone.viewport})`);
    for (const { term, dt, dd } of phone.terms) {
      assert.ok(
        dd.width >= 0.8 * phone.contentWidth,
        `"${term}": its value is ${Math.round(dd.width)} px wide, under 80 % of the content's ${phone.contentWidth} px`,
      );
      assert.ok(dd.top >= dt.bottom - 1, `"${term}": its value is beside its label, not below it`);
    }
    const emailTerm = phone.terms.find((x) => x.term === "Email")!;
    assert.ok(
      emailTerm.dd.height < 1.5 * emailTerm.ddLineHeight,
      `the email breaks over lines (${emailTerm.dd.height} px high, a line is ${emailTerm.ddLineHeight} px)`,
    );
    await assertNoA11yViolations(page, "390 px");

    await page.setViewportSize(DESKTOP);
    await page.goto("/ui/account");
    await heading(page, "Your account");
    await saveStep(page, "account at 1280 px");
    const desktop = await measure(page);
    for (const { term, dt, dd } of desktop.terms) assert.ok(dd.left >= dt.right, `"${term}": at desktop width the value stays beside its label`);
    await assertNoA11yViolations(page, "1280 px");
  },
);
