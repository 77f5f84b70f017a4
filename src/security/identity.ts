/** Input normalisation for member identity (D8). Failures become validation_failed. */
import { AuthError } from "../errors.js";

const EMAIL_MAX = 254;
const NAME_MAX = 100;
// One @, a non-empty local part without spaces, a dotted domain of letters, digits and hyphens.
const EMAIL_PATTERN = /^[^\s@]+@(?:[\p{L}\p{N}](?:[\p{L}\p{N}-]*[\p{L}\p{N}])?\.)+[\p{L}\p{N}]{2,}$/u;
/**
 * Characters a name shown to people must not hold (D30): controls (Cc) and format characters (Cf).
 * Format characters are invisible but change what is shown: a right-to-left override (U+202E)
 * makes "gnp.exe" read "exe.png", and zero-width ones (U+200B, U+200D, U+2060, U+FEFF) make two
 * names that look alike differ. Names reach security alerts, webhooks and admin views. The price:
 * emoji joined by U+200D and the tag-letter flags (Scotland, Wales) are refused too.
 */
export const UNSHOWABLE_CHARACTERS = /[\p{Cc}\p{Cf}]/u;

export function normalizeEmail(raw: string): string {
  const email = raw.trim().toLowerCase();
  if (email.length === 0 || email.length > EMAIL_MAX || !EMAIL_PATTERN.test(email)) {
    throw new AuthError("validation_failed", {
      message: "The email address is not valid.",
      details: [{ field: "email", rule: "email", message: "must be an email address" }],
    });
  }
  return email;
}

/**
 * Whether a name, once its spaces are trimmed (or folded) from `raw`, holds none of
 * UNSHOWABLE_CHARACTERS. U+FEFF is looked for in `raw`: JS's trim() and \s count it as a space, so
 * it would otherwise be dropped or folded quietly instead of refused.
 */
export function isShowableName(name: string, raw: string): boolean {
  return !UNSHOWABLE_CHARACTERS.test(name) && !raw.includes("\ufeff");
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
  if (length < 1 || length > NAME_MAX) {
    throw new AuthError("validation_failed", {
      message: "The name must be 1 to 100 characters.",
      details: [{ field: "name", rule: "name", message: "1 to 100 characters, no control or invisible formatting characters" }],
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
