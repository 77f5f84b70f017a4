/**
 * Issue 30's federated sign-in in a real headless Chromium against Latch in dev mode, through dev
 * mode's own provider (panva's oidc-provider at /dev/idp, connection `dev`): a newcomer signs up by
 * "Continue with Dev provider"; an existing member's email asks for the account's proof and links
 * after it; a provider that did not confirm the email lands on the error page. Every page passes
 * axe-core; screenshots go to test-artifacts/e2e/hosted-federation/.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { BrowserContext, Page } from "playwright-core";
import { callApi, signInDevMember, verifiedDevMember } from "./support/dev-api.js";
import { giveSessionCookie, heading, pressButton, step } from "./support/journey.js";
import { useE2eSuite } from "./support/suite.js";

const suite = useE2eSuite("hosted-federation");
const FLOW_TIMEOUT = { timeout: 180_000 };

/** From the login page through the dev provider's form, as a person does. */
async function continueWithDevProvider(page: Page, email: string, verified: boolean): Promise<void> {
  await page.goto("/ui/login");
  await heading(page, "Log in");
  await page.getByRole("link", { name: "Continue with Dev provider" }).click();
  await heading(page, "Sign in to the dev identity provider");
  await page.getByRole("textbox", { name: "Email" }).fill(email);
  if (!verified) await page.getByRole("checkbox", { name: "The provider has verified this email" }).uncheck();
  await page.getByRole("button", { name: "Sign in" }).click();
}

async function sessionOf(context: BrowserContext): Promise<string | undefined> {
  return (await context.cookies()).find((c) => c.name === "session_id")?.value;
}

test("a newcomer signs up with the dev provider from the login page's button and lands signed in", FLOW_TIMEOUT, async (t) => {
  const { context, page } = await suite.openPage(t);
  await page.goto("/ui/login");
  await heading(page, "Log in");
  await step(page, "login page with a provider");
  await continueWithDevProvider(page, "lin@example.org", true);
  await heading(page, "Your account");
  await step(page, "signed in by the provider");
  const cookie = await sessionOf(context);
  assert.ok(cookie, "a session cookie");
  const me = (await (await callApi(suite.server, "GET", "/auth/me", undefined, cookie)).json()) as { email: string; authentication_type: string[] };
  assert.deepEqual([me.email, me.authentication_type], ["lin@example.org", ["Federated"]]);
});

test("an existing member's email: the page asks for the account's proof, then links; the identities page lists it", FLOW_TIMEOUT, async (t) => {
  const email = "rosalind@example.org";
  await verifiedDevMember(suite.server, email, "Rosalind Franklin");
  const { context, page } = await suite.openPage(t);
  await continueWithDevProvider(page, email, true);
  await page.waitForURL(/\/ui\/federated-link$/);
  await heading(page, "Link your Dev provider account");
  assert.equal(await sessionOf(context), undefined, "the provider's word alone signs no one in");
  await step(page, "prove the account first");
  // The member proves the account (a sign-in in this browser after the callback), then comes back.
  await giveSessionCookie(context, suite.server, await signInDevMember(suite.server, email));
  await page.goto("/ui/federated-link");
  await pressButton(page, "Link Dev provider");
  await page.waitForURL(/\/ui\/account\/identities\?notice=identity-linked$/);
  await page.getByText("Dev provider").first().waitFor();
  await step(page, "identity linked");
});

test("a provider that did not confirm the email lands on a page that says so, signed in as no one", FLOW_TIMEOUT, async (t) => {
  const { context, page } = await suite.openPage(t);
  await continueWithDevProvider(page, "unconfirmed@example.org", false);
  await page.waitForURL(/\/ui\/federated-error\?code=federation_failed&reason=email_not_confirmed$/);
  await heading(page, "Sign-in did not work");
  await step(page, "email not confirmed");
  assert.equal(await sessionOf(context), undefined);
});
