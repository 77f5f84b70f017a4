/**
 * decisions.md#openid-provider-signing-keys: what Latch signs and verifies itself (the session token,
 * access tokens at userinfo) uses the tenant's cached key set, read from the store at most every
 * SIGNING_KEY_RECHECK_MS, and a rotation still reaches it: within the recheck window, or at once for a
 * token whose kid the set lacks. SQLite and PostgreSQL (LATCH_TEST_STORE).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeProtectedHeader } from "jose";
import * as client from "openid-client";
import { rotateSigningKeys } from "../src/flows/oidc/signing-keys.js";
import { SIGNING_KEY_RECHECK_MS } from "../src/rules.js";
import { ok } from "./support/assertions.js";
import { post, TEST_STORE } from "./support/harness.js";
import { discover } from "./support/oidc-rp.js";
import { setUpProvider, signIn, WEB, type Setup } from "./support/oidc-setup.js";
import { installStoreSeam } from "./support/store-seam.js";

async function sessionToken(s: Setup): Promise<string> {
  return ok<{ token: string }>(await post(s.h, "/auth/session/token", undefined, { cookie: s.cookie })).token;
}

test(`the session token and userinfo read the tenant's keys once per SIGNING_KEY_RECHECK_MS, not on every call (${TEST_STORE})`, async (t) => {
  const s = await setUpProvider(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const { tokens } = await signIn(s, config, WEB.redirect);
  await sessionToken(s);
  await client.fetchUserInfo(config, tokens.access_token, s.recordId);

  const seam = installStoreSeam(s.h);
  const reads = seam.count("signingKeys.listPublishedKeys");
  const secrets = s.h.deps.secrets;
  const open = secrets.open.bind(secrets);
  let opened = 0;
  secrets.open = (sealed: string) => {
    opened++;
    return open(sealed);
  };
  t.after(() => {
    secrets.open = open;
  });
  for (let i = 0; i < 3; i++) {
    await sessionToken(s);
    assert.equal((await client.fetchUserInfo(config, tokens.access_token, s.recordId)).sub, s.recordId);
  }
  assert.equal(reads.calls, 0, "no store read of the keys within the recheck window");
  assert.equal(opened, 0, "the private key is not opened (nor imported) again for each session token");

  s.h.clock.advance(SIGNING_KEY_RECHECK_MS);
  await sessionToken(s);
  await client.fetchUserInfo(config, tokens.access_token, s.recordId);
  assert.ok(reads.calls >= 1, "past the window the kids are read again");
});

test(`after a rotation and the recheck window, the session token is signed with the new key and userinfo verifies a token of the new key (${TEST_STORE})`, async (t) => {
  const s = await setUpProvider(t);
  const config = await discover(s.h, WEB.id, WEB.secret);
  const before = await signIn(s, config, WEB.redirect);
  const oldSessionKid = decodeProtectedHeader(await sessionToken(s)).kid;
  await client.fetchUserInfo(config, before.tokens.access_token, s.recordId);

  const { current } = await rotateSigningKeys(s.h.deps, { id: s.tenantId });
  const newKid = current.find((k) => k.alg === "ES256")!.kid;
  s.h.clock.advance(SIGNING_KEY_RECHECK_MS);

  const sessionKid = decodeProtectedHeader(await sessionToken(s)).kid;
  assert.notEqual(sessionKid, oldSessionKid);
  assert.equal(sessionKid, newKid, "the session token is signed with the new key");
  const after = await signIn(s, config, WEB.redirect);
  assert.equal(decodeProtectedHeader(after.tokens.access_token).kid, newKid);
  assert.equal((await client.fetchUserInfo(config, after.tokens.access_token, s.recordId)).sub, s.recordId, "a token of the new key");
  assert.equal((await client.fetchUserInfo(config, before.tokens.access_token, s.recordId)).sub, s.recordId, "and one of the retired key");
});

test(`userinfo verifies a token of a key its cached set does not know yet: the kid reads the store at once (${TEST_STORE})`, async (t) => {
  const s = await setUpProvider(t);
  // The provider is built (and its keys read) now; the key cache is filled 3 s later, so it is younger.
  const config = await discover(s.h, WEB.id, WEB.secret);
  const before = await signIn(s, config, WEB.redirect);
  s.h.clock.advance(3000);
  await client.fetchUserInfo(config, before.tokens.access_token, s.recordId);
  await rotateSigningKeys(s.h.deps, { id: s.tenantId });
  // The provider's recheck comes first: it signs with the new key while the key cache is within its window.
  s.h.clock.advance(SIGNING_KEY_RECHECK_MS - 3000);
  const after = await signIn(s, config, WEB.redirect);
  assert.notEqual(decodeProtectedHeader(after.tokens.access_token).kid, decodeProtectedHeader(before.tokens.access_token).kid, "signed with the new key");
  assert.equal((await client.fetchUserInfo(config, after.tokens.access_token, s.recordId)).sub, s.recordId);
});
