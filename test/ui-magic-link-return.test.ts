/**
 * hosted-pages.md#magic-link-returnto: a member sent to /ui/login?returnTo=… (by /oauth/interaction,
 * or /ui/federated-link) who chooses "Email me a login link" comes back there after the link or the
 * emailed code, as after a password. The return path rides in a cookie sent only to the pages that
 * finish the login, never in the emailed link, and is only ever a path on this site.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { createHarness, deliverWebhooks, parseLink, registerVerifiedMember, type Harness } from "./support/harness.js";
import { lastWebhookFor, nextIp } from "./support/flows.js";
import { assertPage, assertSeeOther, getPage, postForm } from "./support/ui-forms.js";

const RETURN_TO = "/oauth/interaction/abc123DEF";
const HOUR_AND_A_BIT = 61 * 60_000;
const Q = `?returnTo=${encodeURIComponent(RETURN_TO)}`;

let h: Harness;
before(async () => {
  h = await createHarness();
});
after(() => h.close());

async function requestLink(email: string, query = Q) {
  h.clock.advance(HOUR_AND_A_BIT); // past the per-address cooldown and hourly limits of link requests
  const res = await postForm(h, `/ui/magic-link${query}`, { email }, { ip: nextIp() });
  assertSeeOther(res, "/ui/check-email?for=magic-link");
  await deliverWebhooks(h);
  const body = lastWebhookFor(h, "magic_login", email).body;
  return { res, link: body.magicLoginLink!, code: body.code! };
}

test("the login page's way to a login link keeps returnTo, and the request remembers it only for the pages that finish the login", async () => {
  const login = assertPage(await getPage(h, `/ui/login${Q}`));
  assert.ok(login.includes(`href="/ui/magic-link?returnTo=${encodeURIComponent(RETURN_TO)}"`), "the link to the magic-link page carries it");
  const page = assertPage(await getPage(h, `/ui/magic-link${Q}`));
  assert.ok(page.includes(`action="/ui/magic-link?returnTo=${encodeURIComponent(RETURN_TO)}"`), "its form posts it back");

  const email = "return-cookie@example.org";
  await registerVerifiedMember(h, email);
  const { res, link } = await requestLink(email);
  const cookies = res.cookies.filter((c) => c.name === "login_return_to");
  assert.deepEqual(cookies.map((c) => c.path).sort(), ["/ui/check-email", "/ui/verify-magic-link", "/verify-magic-link"]);
  for (const c of cookies) {
    assert.equal(decodeURIComponent(c.value), RETURN_TO);
    assert.equal(c.sameSite, "Strict");
    assert.equal(c.secure, true);
    assert.equal(c.maxAge, 15 * 60, "for the link's lifetime");
  }
  assert.ok(!link.includes("returnTo") && !link.includes("interaction"), "the emailed link does not carry it");
});

test("after the link, the member goes back to returnTo; the cookie is then forgotten", async () => {
  const email = "return-link@example.org";
  await registerVerifiedMember(h, email);
  const { link } = await requestLink(email);
  const { recordId, token } = parseLink(link);
  const res = await postForm(h, `/verify-magic-link/${recordId}/${token}`, {}, { ip: nextIp(), cookies: { login_return_to: RETURN_TO } });
  assertSeeOther(res, RETURN_TO);
  assert.ok(
    res.cookies.some((c) => c.name === "login_return_to" && c.value === ""),
    "forgotten once used",
  );
});

test("after the emailed code, the member goes back to returnTo", async () => {
  const email = "return-code@example.org";
  await registerVerifiedMember(h, email);
  const { code } = await requestLink(email);
  const res = await postForm(h, "/ui/check-email?for=magic-link", { email, code }, { ip: nextIp(), cookies: { login_return_to: RETURN_TO } });
  assertSeeOther(res, RETURN_TO);
});

test("never an open redirect: another site in returnTo is not remembered, nor followed from the cookie", async () => {
  const evils = ["https://evil.example/x", "//evil.example/x", "/\\evil.example"];
  const email = "return-evil@example.org";
  await registerVerifiedMember(h, email);
  for (const evil of evils) {
    const { res } = await requestLink(email, `?returnTo=${encodeURIComponent(evil)}`);
    assert.ok(
      res.cookies.filter((c) => c.name === "login_return_to").every((c) => c.value === ""),
      `${evil}: not remembered (an older one is cleared)`,
    );
  }
  for (const evil of evils) {
    const { link } = await requestLink(email, "");
    const { recordId, token } = parseLink(link);
    const res = await postForm(h, `/verify-magic-link/${recordId}/${token}`, {}, { ip: nextIp(), cookies: { login_return_to: evil } });
    const location = assertSeeOther(res, /^\/(?![/\\])/);
    assert.ok(!location.includes("evil"), `${evil}: the tenant's own landing page (${location}), not the cookie's`);
  }
});
