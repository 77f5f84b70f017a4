/**
 * The keyboard-only pass of issue 7: move with Tab, read what has focus (its role and accessible
 * name, as Playwright's aria snapshot computes them, and whether a focus indicator is drawn), and
 * act with Enter or Space. No mouse, no element.click(), no locator.fill().
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import type { PageWindow } from "./dom.js";

export interface FocusedElement {
  role: string;
  name: string;
  tag: string;
  /** The element matches :focus-visible, which keyboard focus should. */
  focusVisible: boolean;
  /** The drawn indicator ("outline 3px solid rgb(…)", "box-shadow …"), or null when nothing shows focus. */
  indicator: string | null;
}

export interface FocusTarget {
  name: string | RegExp;
  role?: string;
}

const TRANSPARENT = /^(transparent|rgba\(\d+, \d+, \d+, 0\))$/;

/** The element that has focus, or null when focus is on the page itself. */
export async function readFocus(page: Page): Promise<FocusedElement | null> {
  const style = await page.evaluate(() => {
    const { document, getComputedStyle } = globalThis as unknown as PageWindow;
    const element = document.activeElement;
    if (!element || element === document.body) return null;
    const s = getComputedStyle(element);
    return {
      tag: element.tagName.toLowerCase(),
      focusVisible: element.matches(":focus-visible"),
      outlineStyle: s.outlineStyle,
      outlineWidth: s.outlineWidth,
      outlineColor: s.outlineColor,
      boxShadow: s.boxShadow,
    };
  });
  if (!style) return null;
  const snapshot = await page.locator(":focus").ariaSnapshot();
  const [, role = "generic", quoted] = /^- ([a-z]+)(?: ("(?:[^"\\]|\\.)*"))?/.exec(snapshot.split("\n")[0] ?? "") ?? [];
  const outlined = style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0 && !TRANSPARENT.test(style.outlineColor);
  const indicator = outlined
    ? `outline ${style.outlineWidth} ${style.outlineStyle} ${style.outlineColor}`
    : style.boxShadow !== "none"
      ? `box-shadow ${style.boxShadow}`
      : null;
  return { role, name: quoted ? (JSON.parse(quoted) as string) : "", tag: style.tag, focusVisible: style.focusVisible, indicator };
}

function describe(focus: FocusedElement | null): string {
  return focus ? `${focus.role} "${focus.name}"` : "(the page)";
}

function matches(focus: FocusedElement | null, target: FocusTarget): focus is FocusedElement {
  if (!focus || (target.role !== undefined && focus.role !== target.role)) return false;
  return typeof target.name === "string" ? focus.name === target.name : target.name.test(focus.name);
}

/**
 * Presses Tab (Shift+Tab with `backwards`) until the target has focus, and returns it; fails with
 * the focus order it saw when the target is not reached within `maxTabs` presses.
 */
export async function tabTo(page: Page, target: FocusTarget, options: { maxTabs?: number; backwards?: boolean } = {}): Promise<FocusedElement> {
  const order: string[] = [];
  for (let i = 0; i < (options.maxTabs ?? 40); i++) {
    await page.keyboard.press(options.backwards ? "Shift+Tab" : "Tab");
    const focus = await readFocus(page);
    order.push(describe(focus));
    if (matches(focus, target)) return focus;
  }
  assert.fail(`Tab never reached ${target.role ?? "element"} ${target.name}; focus went: ${order.join(" -> ")}`);
}

/** Fails unless keyboard focus is drawn: :focus-visible matches and an outline or box-shadow shows. */
export function assertVisibleFocus(focus: FocusedElement): void {
  assert.ok(focus.focusVisible, `${describe(focus)} has focus but doesn't match :focus-visible`);
  assert.ok(focus.indicator, `${describe(focus)} has keyboard focus but no visible focus indicator (no outline, no box-shadow)`);
}

/** Acts on the focused element as a keyboard user would: Enter follows a link or submits, Space presses a button or ticks a box. */
export async function activate(page: Page, key: "Enter" | "Space" = "Enter"): Promise<void> {
  await page.keyboard.press(key === "Space" ? " " : key);
}

export interface KeyboardField {
  /** The field's accessible name (its label). */
  name: string | RegExp;
  /** Text is typed over what the field holds; a boolean sets a checkbox with Space. */
  value: string | boolean;
}

/**
 * Fills a form with the keyboard only: Tab to each field by its label, type (or Space), then Tab
 * to the submit button and press Enter. Every field and the button must show visible focus.
 */
export async function fillFormByKeyboard(page: Page, fields: KeyboardField[], submit: FocusTarget): Promise<void> {
  for (const field of fields) {
    const focus = await tabTo(page, { name: field.name });
    assertVisibleFocus(focus);
    if (typeof field.value === "boolean") {
      const checked = await page.locator(":focus").isChecked();
      if (checked !== field.value) await activate(page, "Space");
    } else {
      await page.keyboard.press("ControlOrMeta+A");
      await page.keyboard.type(field.value);
    }
  }
  assertVisibleFocus(await tabTo(page, { role: "button", ...submit }));
  await activate(page, "Enter");
}
