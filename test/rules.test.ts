/**
 * Issue 18: every number of every rule lives in src/rules.ts. docs/limits.md is generated from it
 * and must match; no other source file may define a constant of the same name (a second copy that
 * could drift from the table). Issue 28: nor quote one in a string (a page, an error message, a
 * schema description), and the schema bounds and the words people read are rules.ts's numbers.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import ts from "typescript";
import { MINUTE, SECOND } from "../src/core/clock.js";
import { seededRandom } from "../src/core/random.js";
import { AuthError } from "../src/errors.js";
import { newLoginCode } from "../src/flows/kernel/one-time-tokens.js";
import { TenantSettingsSchema } from "../src/core/tenant-settings.js";
import { passkeyName } from "../src/flows/passkeys/manage.js";
import { VerifyLoginCodeBody } from "../src/http/routes/magic-link.js";
import { RegistrationVerifyBody, RenamePasskeyBody } from "../src/http/routes/passkeys.js";
import { NameField, PasswordField, TenantHeaders } from "../src/http/schemas.js";
import * as rules from "../src/rules.js";
import { normalizeEmail, normalizeName } from "../src/security/identity.js";
import { failedPasswordRules } from "../src/security/password.js";
import { messageForError, PASSWORD_HINT, TWO_FACTOR_CODE_HINT } from "../src/ui/form-errors.js";
import { LOGIN_EMAIL_COOKIE } from "../src/ui/paths.js";
import { AUDIT_EVENTS_FILE, LIMITS_FILE, renderAuditEventsDocument } from "../scripts/generated-docs.js";

test("docs/limits.md is what src/rules.ts generates", () => {
  assert.equal(
    readFileSync(LIMITS_FILE, "utf8"),
    rules.renderLimitsDocument(),
    "docs/limits.md is out of date with src/rules.ts: run `npm run docs` and commit the result",
  );
});

test("docs/audit-events.md is what the audit event catalogue generates", () => {
  assert.equal(
    readFileSync(AUDIT_EVENTS_FILE, "utf8"),
    renderAuditEventsDocument(),
    "docs/audit-events.md is out of date with src/model.ts AUDIT_EVENTS: run `npm run docs` and commit the result",
  );
});

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "browser" ? [] : sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

test("no other source file defines a rule's number again", () => {
  const names = Object.keys(rules).filter((name) => typeof (rules as Record<string, unknown>)[name] !== "function" && name !== "RULE_TABLE");
  assert.ok(names.length > 20, `the catalog's constants: ${names.join(", ")}`);
  const redefined = sourceFiles("src")
    .filter((file) => file !== join("src", "rules.ts"))
    .flatMap((file) => {
      const text = readFileSync(file, "utf8");
      return names.filter((name) => new RegExp(`\\b(const|let|var)\\s+${name}\\s*[:=]`).test(text)).map((name) => `${file}: ${name}`);
    });
  assert.deepEqual(redefined, []);
});

test("every row names the spec or DECISIONS row it implements", () => {
  // By its anchor in docs/contract.md; test/citations.test.ts checks that the anchor exists.
  for (const row of rules.RULE_TABLE) assert.match(row.source, /^contract\.md#(spec-\d-\d|d\d+)\b/, row.rule);
});

test("each rule has one row in docs/limits.md", () => {
  const names = rules.RULE_TABLE.map((row) => row.rule);
  assert.deepEqual(
    names.filter((name, i) => names.indexOf(name) !== i),
    [],
  );
});

/**
 * A number said with its unit in a string literal or a template's text: "15 minutes", "at most 256
 * characters", "3 wrong codes", "the 6-digit code". Such a sentence is built from rules.ts instead
 * (`${describeDuration(TOKEN_LIFETIMES_MS.magic_login)}`), so it can't go on saying the old number.
 */
const QUOTED_NUMBER =
  /\b\d[\d,.]*(?: (?:seconds?|minutes?|hours?|days?|weeks?|characters?|digits?|levels?|bytes?|KiB|per|wrong|passkeys?|codes?|requests?|attempts?|IPs?|tries)|-digit)\b/g;

/**
 * Strings that may quote a number, by file: each entry is a part of the literal that holds the
 * quote. An entry that no longer matches fails the test, so the list only shrinks.
 */
const QUOTES_ALLOWED: Record<string, { text: string; why: string }[]> = {};

/** Every string literal and template text of a source file, with its line. */
function stringsOf(file: string): { line: number; text: string }[] {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const found: { line: number; text: string }[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateLiteralToken(node)) {
      found.push({ line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1, text: node.text });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

test("no string in src/ quotes a rule's number: pages, messages and descriptions are built from rules.ts", () => {
  const used = new Set<{ text: string }>();
  const quotes: string[] = [];
  for (const file of [...sourceFiles("src"), ...sourceFiles(join("src", "ui", "browser"))]) {
    if (file === join("src", "rules.ts")) continue;
    for (const { line, text } of stringsOf(file)) {
      for (const match of text.matchAll(QUOTED_NUMBER)) {
        const allowed = QUOTES_ALLOWED[file.split("\\").join("/")]?.find((entry) => text.includes(entry.text) && entry.text.includes(match[0]));
        if (allowed) used.add(allowed);
        else quotes.push(`${file}:${line}: "${match[0]}"`);
      }
    }
  }
  assert.deepEqual(quotes, [], "build these from rules.ts (describeDuration words a duration)");
  const unused = Object.entries(QUOTES_ALLOWED).flatMap(([file, entries]) => entries.filter((e) => !used.has(e)).map((e) => `${file}: ${e.text}`));
  assert.deepEqual(unused, [], "these allowances match nothing any more: take them out of QUOTES_ALLOWED");
});

/** A JSON Schema keyword of a TypeBox schema (its TypeScript type does not carry the options). */
function keyword(schema: unknown, name: "maxLength" | "pattern" | "minimum" | "maximum" | "maxItems" | "anyOf"): unknown {
  return (schema as Record<string, unknown>)[name];
}

test("the JSON schemas' bounds are rules.ts's numbers", () => {
  assert.equal(keyword(PasswordField, "maxLength"), rules.PASSWORD_MAX_LENGTH);
  // Issue 29: the document's bound is the flow's (JSON Schema counts code points, as the flow does).
  assert.equal(keyword(NameField, "maxLength"), rules.NAME_MAX_LENGTH);
  assert.equal(keyword(RenamePasskeyBody.properties.name, "maxLength"), rules.PASSKEY_NAME_MAX_LENGTH);
  assert.equal(keyword(RegistrationVerifyBody.properties.name, "maxLength"), rules.PASSKEY_NAME_MAX_LENGTH);
  assert.equal(keyword(TenantHeaders.properties["x-tenant-domain"], "maxLength"), rules.TENANT_DOMAIN_MAX_LENGTH);
  const codePattern = new RegExp(keyword(VerifyLoginCodeBody.properties.code, "pattern") as string);
  assert.ok(codePattern.test("0".repeat(rules.LOGIN_CODE_DIGITS)) && !codePattern.test("0".repeat(rules.LOGIN_CODE_DIGITS + 1)));

  const settings = TenantSettingsSchema.properties;
  assert.equal(keyword(settings.resetTokenTtlMinutes, "minimum"), rules.RESET_TOKEN_LIFETIME_MS.min / MINUTE);
  assert.equal(keyword(settings.resetTokenTtlMinutes, "maximum"), rules.RESET_TOKEN_LIFETIME_MS.max / MINUTE);
  assert.equal(keyword(settings.allowedOrigins, "maxItems"), rules.MAX_ALLOWED_ORIGINS);
  const tiers = (keyword(settings.sessionTier, "anyOf") as { const: string }[]).map((tier) => tier.const);
  assert.deepEqual(tiers, Object.keys(rules.sessionTiers));
});

function refusal(work: () => unknown): AuthError {
  try {
    work();
  } catch (error) {
    if (error instanceof AuthError) return error;
    throw error;
  }
  assert.fail("expected a refusal");
}

test("what flows and pages tell people holds rules.ts's numbers, and the numbers hold", () => {
  const weak = messageForError("weak_password", "", ["min_length", "max_length"]);
  assert.match(weak, new RegExp(`at least ${rules.PASSWORD_MIN_LENGTH} characters; at most ${rules.PASSWORD_MAX_LENGTH} characters`));
  assert.match(PASSWORD_HINT, new RegExp(`^At least ${rules.PASSWORD_MIN_LENGTH} characters`));
  assert.match(TWO_FACTOR_CODE_HINT, new RegExp(`^The ${rules.TOTP_PARAMETERS.digits}-digit code`));
  assert.deepEqual(failedPasswordRules(`Aa1${"x".repeat(rules.PASSWORD_MAX_LENGTH - 3)}`), []);
  assert.deepEqual(failedPasswordRules(`Aa1${"x".repeat(rules.PASSWORD_MAX_LENGTH - 2)}`), ["max_length"]);

  assert.equal(normalizeName("n".repeat(rules.NAME_MAX_LENGTH)).length, rules.NAME_MAX_LENGTH);
  assert.match(refusal(() => normalizeName("n".repeat(rules.NAME_MAX_LENGTH + 1))).message, new RegExp(`1 to ${rules.NAME_MAX_LENGTH} characters`));
  const longestEmail = `${"a".repeat(rules.EMAIL_MAX_LENGTH - "@example.org".length)}@example.org`;
  assert.equal(normalizeEmail(longestEmail), longestEmail);
  assert.equal(refusal(() => normalizeEmail(`a${longestEmail}`)).code, "validation_failed");
  assert.equal(passkeyName("k".repeat(rules.PASSKEY_NAME_MAX_LENGTH)).length, rules.PASSKEY_NAME_MAX_LENGTH);
  assert.match(
    refusal(() => passkeyName("k".repeat(rules.PASSKEY_NAME_MAX_LENGTH + 1))).message,
    new RegExp(`1 to ${rules.PASSKEY_NAME_MAX_LENGTH} characters`),
  );

  assert.match(newLoginCode(seededRandom("rules")), new RegExp(`^[0-9]{${rules.LOGIN_CODE_DIGITS}}$`));
  assert.equal(LOGIN_EMAIL_COOKIE.maxAgeSeconds * SECOND, rules.TOKEN_LIFETIMES_MS.magic_login);
});

test("describeDuration and describeDurationAfterA word a duration", () => {
  assert.equal(rules.describeDuration(15 * MINUTE), "15 minutes");
  assert.equal(rules.describeDuration(60 * MINUTE), "1 hour");
  assert.equal(rules.describeDuration(250), "250 ms");
  assert.equal(rules.describeDurationAfterA(MINUTE), "a minute");
  assert.equal(rules.describeDurationAfterA(60 * MINUTE), "an hour");
  assert.equal(rules.describeDurationAfterA(5 * SECOND), "5 seconds");
});
