// D30: a member's name refuses Unicode format characters (category Cf: bidi controls, zero-width
// characters) as it refuses control characters, on every way a name comes in: register-password,
// register-magic-link, PATCH /auth/me and their hosted pages. Refused names store nothing.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import { assertError } from "./support/assertions.js";
import { memberField, rowCounts } from "./support/database.js";
import { nextIp } from "./support/flows.js";
import { createHarness, login, post, registerVerifiedMember, sessionCookieOf } from "./support/harness.js";
import { assertErrorSummary, assertPage, postForm } from "./support/ui-forms.js";

const bot = { "bot-challenge-response": "x" };

/** Names that look like another (or hide what they say) because of an invisible format character. */
const DISGUISED_NAMES = [
  "Ada \u202eecalevoL", // RIGHT-TO-LEFT OVERRIDE: shown reversed
  "Ada\u200b Lovelace", // ZERO WIDTH SPACE
  "Ada\u200dLovelace", // ZERO WIDTH JOINER
  "Ada\u200cLovelace", // ZERO WIDTH NON-JOINER
  "Ada\u2060Lovelace", // WORD JOINER
  "\ufeffAda Lovelace", // ZERO WIDTH NO-BREAK SPACE (BOM), not trimmed as a space would be
  "Ada\u00adLovelace", // SOFT HYPHEN
  "Ada \u2066Lovelace\u2069", // LEFT-TO-RIGHT ISOLATE ... POP DIRECTIONAL ISOLATE
  "Ada \u200fLovelace", // RIGHT-TO-LEFT MARK
  "Ada \u061cLovelace", // ARABIC LETTER MARK
  "Ada Lovelace\u{e0041}", // TAG LATIN CAPITAL LETTER A (outside the BMP)
  // Found in review: separators and letters that render as nothing.
  "Ada\u2028Lovelace", // LINE SEPARATOR
  "Ada Lovelace\u2029", // PARAGRAPH SEPARATOR, which trim() would drop quietly
  "Ada\u3164Lovelace", // HANGUL FILLER
  "\u115fAda", // HANGUL CHOSEONG FILLER
  "Ada\uffa0", // HALFWIDTH HANGUL FILLER
  "Ada\u2800Lovelace", // BRAILLE PATTERN BLANK
  "Ada\u034fLovelace", // COMBINING GRAPHEME JOINER
];

/** Names in other scripts and with marks are letters, not format characters: accepted. */
const GOOD_NAMES = ["Zoë Ångström-Nuñez", "李小龙", "محمد بن موسى", "Ꭰꮒꭺ", "O'Brien Jr."];

function assertNameRefused(response: LightMyRequestResponse, where: string): void {
  const body = assertError(response, 400, "validation_failed");
  const details = body.details as { field: string; rule: string; message: string }[];
  assert.ok(Array.isArray(details) && details.length > 0, `details on ${where}: ${response.body}`);
  assert.deepEqual(
    details.map((d) => [d.field, d.rule]),
    [["name", "name"]],
    where,
  );
}

test("D30: register-password and register-magic-link refuse a name with a format character (400 validation_failed, details), and store nothing", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const before = await rowCounts(h);
  for (const name of DISGUISED_NAMES) {
    const where = JSON.stringify(name);
    const withPassword = await post(
      h,
      "/auth/register-password",
      { email: "new@example.org", name, password: "Correct-Horse-42-Battery", ...bot },
      { ip: nextIp() },
    );
    assertNameRefused(withPassword, `register-password ${where}`);
    const withLink = await post(h, "/auth/register-magic-link", { email: "new@example.org", name, ...bot }, { ip: nextIp() });
    assertNameRefused(withLink, `register-magic-link ${where}`);
  }
  assert.deepEqual(await rowCounts(h), before, "nothing stored");
  assert.equal(h.receiver.received.length, 0, "no webhook");

  for (const [i, name] of GOOD_NAMES.entries()) {
    const res = await post(h, "/auth/register-magic-link", { email: `good${i}@example.org`, name, ...bot }, { ip: nextIp() });
    assert.equal(res.statusCode, 200, `${name}: ${res.body}`);
  }
});

test("D30: PATCH /auth/me refuses a name with a format character and keeps the old name; a name in any script is accepted", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, "me@example.org");
  const cookie = sessionCookieOf(await login(h, "me@example.org", undefined, { ip: nextIp() }))!;
  const patch = (name: string) =>
    h.app.inject({ method: "PATCH", url: "/auth/me", payload: { name }, headers: { "x-tenant-domain": h.tenant.domain, cookie: `session_id=${cookie}` } });
  const before = await rowCounts(h);
  for (const name of DISGUISED_NAMES) assertNameRefused(await patch(name), `PATCH /auth/me ${JSON.stringify(name)}`);
  assert.deepEqual(await rowCounts(h), before, "no audit event, no webhook row");
  assert.equal(await memberField(h, recordId, "name"), "Ada Lovelace");

  for (const name of GOOD_NAMES) {
    const res = await patch(name);
    assert.equal(res.statusCode, 200, `${name}: ${res.body}`);
    assert.equal(await memberField(h, recordId, "name"), name);
  }
});

test("D30: the hosted registration and name forms refuse a name with a format character, with the error at the field", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, "page@example.org");
  const cookie = sessionCookieOf(await login(h, "page@example.org", undefined, { ip: nextIp() }))!;
  const before = await rowCounts(h);
  // (A form's fields are trimmed first, as a browser's stray spaces are: a U+FEFF at either end goes with them.)
  for (const name of ["Ada \u202eecalevoL", "Ada\u200bLovelace", "Ada\ufeffLovelace"]) {
    const registered = assertPage(
      await postForm(h, "/ui/register", { name, email: "form@example.org", password: "Correct-Horse-42-Battery" }, { ip: nextIp() }),
      400,
    );
    assertErrorSummary(registered, /formatting character/);
    const emailOnly = assertPage(await postForm(h, "/ui/register-email-only", { name, email: "form@example.org" }, { ip: nextIp() }), 400);
    assertErrorSummary(emailOnly, /formatting character/);
    const renamed = assertPage(await postForm(h, "/ui/account/name", { name }, { cookie, ip: nextIp() }), 400);
    assertErrorSummary(renamed, /formatting character/);
  }
  assert.deepEqual(await rowCounts(h), before);
  assert.equal(await memberField(h, recordId, "name"), "Ada Lovelace");
});

test("D30: an email address with a bidi override or an invisible character is refused like a disguised name (it is shown in alerts as newEmail)", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const before = await rowCounts(h);
  for (const email of ["ada\u202e@example.org", "ad\u200ba@example.org", "ada\u2800@example.org"]) {
    const res = await post(h, "/auth/register-password", { email, name: "Ada", password: "Correct-Horse-42-Battery", ...bot }, { ip: nextIp() });
    const body = assertError(res, 400, "validation_failed");
    assert.deepEqual(
      (body.details as { field: string }[]).map((d) => d.field),
      ["email"],
      JSON.stringify(email),
    );
  }
  assert.deepEqual(await rowCounts(h), before);
});
