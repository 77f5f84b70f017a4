/**
 * The pages Latch serves today, in a real headless Chromium (issue 7): the dev inbox a developer
 * reads the emails in, and the OpenAPI reference. Screenshots of each step go to
 * test-artifacts/e2e/dev-pages/. This suite also proves the harness the hosted pages' flow test uses.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { describeViolations, expectNoSeriousA11yViolations, findA11yViolations, isSerious } from "./support/a11y.js";
import { saveArtifact, saveStep } from "./support/artifacts.js";
import { registerDevMember, waitForEmail } from "./support/dev-api.js";
import { activate, assertVisibleFocus, fillFormByKeyboard, readFocus, tabTo } from "./support/keyboard.js";
import { useE2eSuite } from "./support/suite.js";

const suite = useE2eSuite("dev-pages");

test("the dev inbox shows a registration's verification email, passes axe, and its button is reached by keyboard with visible focus", async (t) => {
  const { page } = await suite.openPage(t);
  await page.goto("/dev/inbox");
  await assert.doesNotReject(page.getByText("No messages yet").waitFor());
  await saveStep(page, "inbox empty");
  await expectNoSeriousA11yViolations(page);

  const recordId = await registerDevMember(suite.server, "ada@example.org", "Ada Lovelace");
  const email = await waitForEmail(suite.server, "verify_email", "ada@example.org");
  assert.match(email.link ?? "", new RegExp(`^${suite.server.baseURL}/email-verified/${recordId}/`));

  await page.goto("/dev/inbox");
  await assert.doesNotReject(page.getByRole("heading", { level: 3, name: "Confirm your email address" }).waitFor());
  await saveStep(page, "inbox with verification email");
  const findings = await expectNoSeriousA11yViolations(page);
  for (const v of findings) t.diagnostic(`axe on /dev/inbox: ${v.id} (${v.impact}) on ${v.nodes.length} node(s)`);

  // Keyboard only: the skip link comes first and moves focus to the messages.
  const skip = await tabTo(page, { role: "link", name: "Skip to messages" }, { maxTabs: 1 });
  assertVisibleFocus(skip);
  await saveStep(page, "skip link focused");
  await activate(page, "Enter");
  assert.equal(await page.evaluate("document.activeElement.id"), "messages", "Enter on the skip link moves focus to <main id=messages>");

  const button = await tabTo(page, { role: "link", name: /^Confirm/ });
  assertVisibleFocus(button);
  assert.equal(await page.locator(":focus").getAttribute("href"), email.link, "the focused button is this email's link");
  await saveStep(page, "email link focused");
  // Following it is hosted-flow.test.ts's first step.
});

test("the dev inbox's navigation is reachable by keyboard and Enter follows a link, back to the hosted pages too", async (t) => {
  const { page } = await suite.openPage(t);
  await page.goto("/dev/inbox");
  const refresh = await tabTo(page, { role: "link", name: "Refresh every 5 seconds" });
  assertVisibleFocus(refresh);
  await activate(page, "Enter");
  await page.waitForURL(/\/dev\/inbox\?refresh=on$/);
  await saveStep(page, "inbox auto refresh");
  const stop = await tabTo(page, { role: "link", name: "Stop refreshing every 5 seconds" });
  assertVisibleFocus(stop);
  await activate(page, "Enter");
  await page.waitForURL(/\/dev\/inbox$/);
  assert.equal(await readFocus(page), null, "a new page starts with focus on the document");
  // Issue 34: the way back from the inbox to the dev tenant's pages.
  const signIn = await tabTo(page, { role: "link", name: "Sign in" });
  assertVisibleFocus(signIn);
  await activate(page, "Enter");
  await page.waitForURL(/\/ui\/login$/);
  await assert.doesNotReject(page.getByRole("heading", { level: 1 }).first().waitFor());
  await saveStep(page, "back to the pages from the inbox");
});

/**
 * The one serious axe finding left on /docs is in @fastify/swagger-ui's own markup: each operation's
 * summary <button> holds focusable children (nested-interactive). Contrast, the logo without alt and
 * the unlabelled URL field are fixed by Latch's theme (src/http/openapi.ts). Listed, not hidden: the
 * test fails when a new one appears and when this one goes away. See docs/testing.md.
 */
const KNOWN_SWAGGER_UI_FINDINGS = ["nested-interactive"];

test("the OpenAPI reference renders under its CSP and lists the operations; no CSP refusal, only swagger-ui's known axe findings", async (t) => {
  const { page, problems } = await suite.openPage(t);
  await page.goto("/docs");
  await assert.doesNotReject(page.getByRole("heading", { name: /Latch/ }).first().waitFor());
  await assert.doesNotReject(page.getByText("registerWithPassword").first().waitFor());
  await saveStep(page, "api reference");
  // swagger-ui's one inline style is let in by its hash (src/http/openapi.ts): no CSP refusal here.
  assert.deepEqual(problems.list(), []);

  const violations = await findA11yViolations(page);
  saveArtifact("api-reference-axe.txt", describeViolations(violations, Infinity) + "\n");
  const serious = violations.filter(isSerious);
  for (const v of serious) t.diagnostic(`axe on /docs (swagger-ui): ${v.id} (${v.impact}) on ${v.nodes.length} node(s): ${v.help}`);
  assert.deepEqual(serious.map((v) => v.id).sort(), KNOWN_SWAGGER_UI_FINDINGS, describeViolations(serious));
  // What Latch writes itself, the API description (tenants, bot check, the error codes table), has none.
  await expectNoSeriousA11yViolations(page, { include: [".information-container .info .description"] });
});

test("the harness fails a test on a CSP violation or a console error (checked here, then allowed)", async (t) => {
  const { page, problems } = await suite.openPage(t);
  await page.goto("/dev/inbox");
  assert.deepEqual(problems.list(), [], "the inbox itself is clean");
  // default-src 'none' refuses the image; the page's own console.error is an error too.
  await page.evaluate(
    "document.body.appendChild(Object.assign(document.createElement('img'), { src: '/e2e-blocked.png', alt: '' })); console.error('e2e: provoked')",
  );
  await assert.doesNotReject(page.waitForFunction("true"));
  for (let i = 0; i < 50 && problems.list().length < 3; i++) await page.waitForTimeout(50);
  const seen = problems.list();
  assert.ok(
    seen.some((line) => /^CSP violation: img-src blocked http:\/\/localhost:\d+\/e2e-blocked\.png/.test(line)),
    seen.join("\n"),
  );
  assert.ok(
    seen.some((line) => /^console error: .*e2e-blocked\.png.*violates the following Content Security Policy directive/.test(line)),
    seen.join("\n"),
  );
  assert.ok(
    seen.some((line) => line.startsWith("console error: e2e: provoked")),
    seen.join("\n"),
  );
  assert.throws(() => problems.assertNone(), /the page had 3 problem\(s\)/);
  problems.allow(/e2e-blocked\.png|e2e: provoked/);
});

test("fillFormByKeyboard fills text fields and a checkbox and submits with Tab, typing, Space and Enter", async (t) => {
  const { page } = await suite.openPage(t);
  // A plain form of the test's own (no script), so the helper is checked apart from any page; it submits by GET to a page that answers 200.
  await page.setContent(`<!doctype html><html lang="en"><title>Form</title><main><form method="get" action="${suite.server.baseURL}/dev/inbox.json">
    <label for="email">Email</label><input id="email" name="email" type="email" value="old@example.org">
    <label for="password">Password</label><input id="password" name="password" type="password">
    <label><input name="remember" type="checkbox" value="yes"> Remember me</label>
    <button type="submit">Sign in</button></form></main></html>`);
  await fillFormByKeyboard(
    page,
    [
      { name: "Email", value: "ada@example.org" },
      { name: "Password", value: "s3cret pass" },
      { name: "Remember me", value: true },
    ],
    { name: "Sign in" },
  );
  await page.waitForURL(/\/dev\/inbox\.json\?/);
  const sent = new URL(page.url()).searchParams;
  assert.deepEqual(
    Object.fromEntries(sent),
    { email: "ada@example.org", password: "s3cret pass", remember: "yes" },
    "typed over the old value, ticked with Space, submitted with Enter",
  );
});
