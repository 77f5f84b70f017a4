/**
 * Which field an API error is about, and the words for failed password rules. Shared by the
 * server pages and the browser script (no Node imports), so both mark the same field.
 */
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, TOTP_PARAMETERS } from "../rules.js";
import { pagePaths } from "./paths.js";

/** Candidate fields per error code, first present one wins. */
const FIELDS_BY_CODE: Record<string, string[]> = {
  weak_password: ["newPassword", "password"],
  breached_password: ["newPassword", "password"],
  invalid_credentials: ["currentPassword", "password", "email"],
  invalid_2fa_code: ["twoFACode", "code", "disableCode"],
  email_not_verified: ["email"],
  validation_failed: [],
};

const RULE_TEXT: Record<string, string> = {
  min_length: `at least ${PASSWORD_MIN_LENGTH} characters`,
  max_length: `at most ${PASSWORD_MAX_LENGTH} characters`,
  uppercase: "an uppercase letter",
  lowercase: "a lowercase letter",
  number_or_special: "a number or a special character",
};

/** The second-factor code field's hint, on the server's step page and in the field the script adds. */
export const TWO_FACTOR_CODE_HINT = `The ${TOTP_PARAMETERS.digits}-digit code from your authenticator app, or one of your recovery codes.`;

export const PASSWORD_HINT = `At least ${PASSWORD_MIN_LENGTH} characters, with an uppercase letter, a lowercase letter, and a number or a special character.`;

/** Field names named by `details` ({field}, {path: "/body/email"} or {path: "/email"}). */
function fieldsInDetails(details: unknown): string[] {
  if (!Array.isArray(details)) return [];
  return details.flatMap((d: unknown) => {
    if (typeof d !== "object" || d === null) return [];
    const { field, path } = d as { field?: unknown; path?: unknown };
    if (typeof field === "string") return [field];
    if (typeof path === "string") return [path.split("/").filter(Boolean).pop() ?? ""];
    return [];
  });
}

export function fieldForError(code: string, details: unknown, fieldsInForm: string[]): string | undefined {
  const candidates = [...fieldsInDetails(details), ...(FIELDS_BY_CODE[code] ?? [])];
  return candidates.find((name) => fieldsInForm.includes(name));
}

/** contract.md#d26: the code form's words for a wrong, used or expired code (the API's invalid_token). */
export const LOGIN_CODE_REFUSED = "That code is wrong or has expired. Check the latest email, or ask for a new link.";

/**
 * Refusals that one form words its own way, picked by the form's operation and the error's code
 * (never by the API's message, which may change): the server page and the script show the same.
 */
/**
 * hosted-pages.md#refusals: a passkey the site does not know (its account deleted, or the passkey
 * removed) or cannot verify. Said the same for every passkey, with the other ways to sign in; it
 * names no account and no email.
 */
export const PASSKEY_NOT_LINKED =
  "This passkey is not linked to an account here: it may have been removed, or its account deleted. Sign in another way, with your email address.";

export interface OwnFormError {
  field?: string;
  message: string;
  next?: { href: string; text: string }[];
}

const ERRORS_BY_OPERATION = new Map<string, Map<string, OwnFormError>>([
  ["verifyLoginCode", new Map([["invalid_token", { field: "code", message: LOGIN_CODE_REFUSED }]])],
  [
    "passkeyLogin",
    new Map([
      [
        "invalid_credentials",
        {
          message: PASSKEY_NOT_LINKED,
          next: [
            { href: pagePaths.login, text: "Log in with your email and password" },
            { href: pagePaths.magicLink, text: "Email me a login link" },
            { href: pagePaths.register, text: "Register" },
          ],
        },
      ],
    ]),
  ],
]);

export function formErrorForCode(operation: string, code: string): OwnFormError | undefined {
  return ERRORS_BY_OPERATION.get(operation)?.get(code);
}

/** The message a person reads: weak_password lists what the password lacks. */
export function messageForError(code: string, message: string, details: unknown): string {
  if (code === "weak_password" && Array.isArray(details)) {
    const missing = details.filter((d): d is string => typeof d === "string").map((rule) => RULE_TEXT[rule] ?? rule);
    // hosted-pages.md#refusals: every rule is needed, so more than one reads as a list of all of them, never as "any one of".
    if (missing.length === 1) return `The password needs ${missing[0]}.`;
    if (missing.length > 1) return `The password needs all of these: ${missing.join("; ")}.`;
  }
  return message;
}
