/**
 * The one email rule (decisions.md#one-email-rule-issue-29): the same regular expressions are the
 * `pattern` of every email in the API document (requests, answers, webhooks) and the check the
 * server runs (security/identity.ts normalizeEmail), so what the document promises and what the
 * server accepts cannot drift apart. A `format: email` would not do: ajv-formats' ASCII pattern
 * refuses internationalised domains and leading dots the server takes, and takes `a@b.c`, which
 * the server refuses.
 *
 * The patterns are ECMA-262 with the `u` flag, as JSON Schema 2020-12 says patterns are (ajv
 * compiles them so). `\s` is exactly the set String.prototype.trim() drops, so the input form's
 * surrounding `\s*` is the trim the server does.
 */
import { Type } from "typebox";
import { EMAIL_MAX_LENGTH } from "../rules.js";

/**
 * What an address must not hold anywhere (contract.md#d30, the characters of a name that show as nothing or
 * change what is shown): it is shown in alerts (`newEmail`) as a name is. security/identity.ts
 * UNSHOWABLE_CHARACTERS, what a name must not hold, is built from it.
 */
export const UNSHOWABLE_CLASS = String.raw`\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u115f\u1160\u2800\u3164\uffa0\u034f\u17b4\u17b5`;

/**
 * An address once trimmed: a local part of anything but whitespace and `@`, one `@`, and a dotted
 * domain whose labels start with a letter or digit and hold letters, combining marks, digits and
 * inner hyphens, the last label at least two long. Marks are allowed after a label's first
 * character because scripts write with them (Devanagari vowel signs), and because lowercasing
 * `İ` (U+0130) gives `i` and a combining dot: so the lowercased address a member is shown always
 * matches the rule its input matched.
 */
const LOCAL_PART = String.raw`[^\s@]+`;
const LABEL = String.raw`[\p{L}\p{N}](?:[\p{L}\p{M}\p{N}-]*[\p{L}\p{M}\p{N}])?`;
const LAST_LABEL = String.raw`[\p{L}\p{N}][\p{L}\p{M}\p{N}]+`;
const NO_UNSHOWABLE = String.raw`(?!\S*[${UNSHOWABLE_CLASS}])`;
const ADDRESS = String.raw`${NO_UNSHOWABLE}${LOCAL_PART}@(?:${LABEL}\.)+${LAST_LABEL}`;

/** An address as a client may send it: surrounding whitespace (trimmed), any case, at most EMAIL_MAX_LENGTH characters once trimmed. */
export const EMAIL_INPUT_PATTERN = String.raw`^\s*(?=\S{1,${EMAIL_MAX_LENGTH}}\s*$)${ADDRESS}\s*$`;
/** An address as Latch sends it (answers, webhooks): the input trimmed and lowercased. */
export const EMAIL_ADDRESS_PATTERN = `^${ADDRESS}$`;

/** The input rule as the server runs it: the document's pattern, compiled as JSON Schema compiles it. */
export const EMAIL_INPUT_REGEXP = new RegExp(EMAIL_INPUT_PATTERN, "u");

/** Schema room for surrounding whitespace around an address of EMAIL_MAX_LENGTH; bounds the regex's work on hostile input. */
export const EMAIL_FIELD_MAX_LENGTH = 320;

/** An email a client sends. */
export const EmailInput = Type.String({
  minLength: 1,
  maxLength: EMAIL_FIELD_MAX_LENGTH,
  pattern: EMAIL_INPUT_PATTERN,
  description: `An email address: one \`@\`, a dotted domain (internationalised names as typed, not punycode), at most ${EMAIL_MAX_LENGTH} characters and no whitespace inside, no control or invisible formatting characters. Surrounding whitespace is trimmed and the address lowercased before it is used or stored.`,
});

/** An email Latch sends: always normalised (trimmed, lowercased), so it matches the input rule too. */
export function EmailAddress(description = "An email address, trimmed and lowercased.") {
  return Type.String({ minLength: 3, pattern: EMAIL_ADDRESS_PATTERN, description });
}
