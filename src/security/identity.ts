/** Input normalisation for member identity (contract.md#d8). Failures become validation_failed. */
import { EMAIL_FIELD_MAX_LENGTH, EMAIL_INPUT_REGEXP, UNSHOWABLE_CLASS } from "../core/email-address.js";
import { AuthError } from "../errors.js";
import { NAME_MAX_LENGTH } from "../rules.js";

/**
 * Characters a name shown to people must not hold (contract.md#d30): controls (Cc), format characters (Cf),
 * line and paragraph separators (Zl, Zp), and the letters and marks that render as nothing (the
 * combining grapheme joiner U+034F, the Hangul fillers U+115F, U+1160, U+3164, U+FFA0, the blank
 * braille pattern U+2800, the Khmer inherent vowels U+17B4, U+17B5). Format characters are
 * invisible but change what is shown: a right-to-left override (U+202E) makes "gnp.exe" read
 * "exe.png", and zero-width ones (U+200B, U+200D, U+2060, U+FEFF) make two names that look alike
 * differ. Names reach security alerts, webhooks and admin views. The price: emoji joined by
 * U+200D and the tag-letter flags (Scotland, Wales) are refused too.
 */
// Built from core/email-address.ts's class, the one the document's email pattern refuses too.
export const UNSHOWABLE_CHARACTERS = new RegExp(`[${UNSHOWABLE_CLASS}]`, "u");
/** What JS's trim() would drop quietly at either end although it is refused inside (U+FEFF, U+2028, U+2029). */
const TRIMMED_UNSHOWABLE = /[\ufeff\u2028\u2029]/u;

/**
 * The one email rule (decisions.md#one-email-rule-issue-29): the input matches the API document's own
 * pattern (core/email-address.ts, which also refuses UNSHOWABLE_CHARACTERS: an address is shown in
 * alerts as a name is, contract.md#d30), and is then trimmed and lowercased; the result matches the
 * pattern the document gives every address Latch sends.
 */
export function normalizeEmail(raw: string): string {
  if (raw.length > EMAIL_FIELD_MAX_LENGTH || !EMAIL_INPUT_REGEXP.test(raw)) {
    throw new AuthError("validation_failed", {
      message: "The email address is not valid.",
      details: [{ field: "email", rule: "email", message: "must be an email address" }],
    });
  }
  return raw.trim().toLowerCase();
}

/**
 * Whether a name, once its spaces are trimmed (or folded) from `raw`, holds none of
 * UNSHOWABLE_CHARACTERS. U+FEFF, U+2028 and U+2029 are looked for in `raw`: JS's trim() and \s
 * count them as spaces, so they would otherwise be dropped or folded quietly instead of refused.
 */
export function isShowableName(name: string, raw: string): boolean {
  return !UNSHOWABLE_CHARACTERS.test(name) && !TRIMMED_UNSHOWABLE.test(raw);
}

export function normalizeName(raw: string): string {
  const name = raw.trim();
  if (!isShowableName(name, raw)) {
    throw new AuthError("validation_failed", {
      message: "The name holds a control or invisible formatting character (such as a text direction mark or a zero-width character).",
      details: [{ field: "name", rule: "name", message: "no control or invisible formatting characters (Unicode Cc, Cf)" }],
    });
  }
  const length = [...name].length;
  if (length < 1 || length > NAME_MAX_LENGTH) {
    throw new AuthError("validation_failed", {
      message: `The name must be 1 to ${NAME_MAX_LENGTH} characters.`,
      details: [{ field: "name", rule: "name", message: `1 to ${NAME_MAX_LENGTH} characters, no control or invisible formatting characters` }],
    });
  }
  return name;
}

/** recordId travels as a string of digits; anything else names no member. */
export function parseRecordId(raw: string): number | undefined {
  if (!/^[0-9]{1,16}$/.test(raw)) return undefined;
  const value = Number(raw);
  return Number.isSafeInteger(value) ? value : undefined;
}
