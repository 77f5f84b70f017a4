/** Input normalisation for member identity (D8). Failures become validation_failed. */
import { AuthError } from "../errors.js";

const EMAIL_MAX = 254;
const NAME_MAX = 100;
// One @, a non-empty local part without spaces, a dotted domain of letters, digits and hyphens.
const EMAIL_PATTERN = /^[^\s@]+@(?:[\p{L}\p{N}](?:[\p{L}\p{N}-]*[\p{L}\p{N}])?\.)+[\p{L}\p{N}]{2,}$/u;
// eslint-disable-next-line no-control-regex
const CONTROL_CHARS = /[\u0000-\u001f\u007f-\u009f]/;

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

export function normalizeName(raw: string): string {
  const name = raw.trim();
  const length = [...name].length;
  if (length < 1 || length > NAME_MAX || CONTROL_CHARS.test(name)) {
    throw new AuthError("validation_failed", {
      message: "The name must be 1 to 100 characters.",
      details: [{ field: "name", rule: "name", message: "1 to 100 characters, no control characters" }],
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
