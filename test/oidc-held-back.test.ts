/**
 * decisions.md#held-back-sessions: a live Latch session whose member must first turn on the tenant's required 2FA, or
 * change the password (Password Change Pending, e.g. after "this wasn't me"), signs in to no application: no code by the
 * interaction, by a silent `prompt=none`, or by a provider session made before the hold. The same sessions get no
 * session token (test/session-token.test.ts). Driven by a real relying party (openid-client) on SQLite and PostgreSQL.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import * as client from "openid-client";
import { MemberStatus } from "../src/model.js";
import { storeTenantSettings } from "./support/flows.js";
import { TEST_STORE } from "./support/harness.js";
import { Browser, discover } from "./support/oidc-rp.js";
import { authorizationUrl, setUpProvider, signedInBrowser, signIn, WEB, type Setup } from "./support/oidc-setup.js";

/** An authorization of the first-party client, followed as far as it goes: the callback, or the page it stopped at. */
async function authorize(config: client.Configuration, browser: Browser, extra: Record<string, string> = {}) {
  const started = await authorizationUrl(config, WEB.redirect, "openid email", extra);
  return browser.follow(started.url, (u) => u.href.startsWith(WEB.redirect));
}

async function assertHeldBack(s: Setup, config: client.Configuration, browser: Browser, nextStep: RegExp, why: string): Promise<void> {
  const silent = await authorize(config, browser, { prompt: "none" });
  assert.equal(silent.answer, undefined, `${why}: prompt=none shows no page`);
  assert.equal(silent.url.searchParams.get("error"), "login_required", `${why}: prompt=none`);
  assert.equal(silent.url.searchParams.get("code"), null, why);

  const shown = await authorize(config, browser);
  assert.ok(shown.answer, `${why}: the interaction stops at a page, never at the callback with a code`);
  assert.match(shown.url.pathname, /^\/oauth\/interaction\//, why);
  assert.equal(shown.answer.statusCode, 403, why);
  assert.match(shown.answer.body, nextStep, `${why}: the page says what to do first`);
  assert.match(shown.answer.body, new RegExp(`<a href="${shown.url.pathname}">continue to`), `${why}: and leads back to this sign-in`);
  // Posting the page (as a consent) does not go round it.
  const posted = await browser.follow(shown.url, (u) => u.href.startsWith(WEB.redirect), { method: "POST", form: { decision: "allow" } });
  assert.equal(posted.answer?.statusCode, 403, `${why}: a post is held back too`);
  void s;
}

test(`a session that must turn on the tenant's required 2FA signs in to no application: not silently, not by the interaction, not by an earlier provider session (${TEST_STORE})`, async (t) => {
  const s = await setUpProvider(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  // Signed in to the app before the tenant required 2FA: the browser holds a provider session and a grant bound to the Latch session.
  const { browser } = await signIn(s, config, WEB.redirect);
  await storeTenantSettings(s.h, { require2FA: true });
  await assertHeldBack(s, config, browser, /turn on two-factor authentication<\/a>/, "the earlier provider session");
  await assertHeldBack(
    s,
    config,
    signedInBrowser(s),
    /<a href="\/ui\/two-factor">turn on two-factor authentication<\/a>/,
    "a browser with the Latch session only",
  );

  // Lifted, the same session signs in again.
  await storeTenantSettings(s.h, { require2FA: false });
  const silent = await authorize(config, signedInBrowser(s), { prompt: "none" });
  assert.ok(silent.url.searchParams.get("code"), `no longer held back (${silent.url.searchParams.get("error")})`);
});

test(`a Password Change Pending member's session signs in to no application until the password is changed (${TEST_STORE})`, async (t) => {
  const s = await setUpProvider(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const { browser } = await signIn(s, config, WEB.redirect);
  // The state a magic-link sign-in leaves after "this wasn't me" or an admin's require-password-change (which end every session first).
  await s.h.db
    .updateTable("members")
    .set({ status: MemberStatus.passwordChangePending })
    .where("tenant_id", "=", s.tenantId)
    .where("id", "=", Number(s.recordId))
    .execute();
  await assertHeldBack(s, config, browser, /<a href="\/ui\/change-password">change your password<\/a>/, "the earlier provider session");
  await assertHeldBack(s, config, signedInBrowser(s), /change your password/, "a browser with the Latch session only");
});
