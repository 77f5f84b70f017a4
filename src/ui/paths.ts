/**
 * Where the hosted pages live. Shared by the server pages and the browser script (no Node imports
 * here), so both send the member to the same place after each step.
 */
import { SECOND } from "../core/durations.js";
import { TOKEN_LIFETIMES_MS } from "../rules.js";

export const UI = "/ui";

export const pagePaths = {
  home: `${UI}/`,
  register: `${UI}/register`,
  registerEmailOnly: `${UI}/register-email-only`,
  login: `${UI}/login`,
  magicLink: `${UI}/magic-link`,
  forgotPassword: `${UI}/forgot-password`,
  resendVerification: `${UI}/resend-verification`,
  checkEmail: `${UI}/check-email`,
  account: `${UI}/account`,
  changePassword: `${UI}/change-password`,
  twoFactor: `${UI}/two-factor`,
  twoFactorSetup: `${UI}/two-factor/setup`,
  twoFactorEnable: `${UI}/two-factor/enable`,
  twoFactorDisable: `${UI}/two-factor/disable`,
  recoveryCodes: `${UI}/two-factor/recovery-codes`,
  logout: `${UI}/logout`,
  accountProfile: `${UI}/account/profile`,
  accountName: `${UI}/account/name`,
  accountEmail: `${UI}/account/email`,
  accountSessions: `${UI}/account/sessions`,
  accountSessionRevoke: `${UI}/account/sessions/revoke`,
  accountSessionsRevokeOthers: `${UI}/account/sessions/revoke-others`,
  accountDelete: `${UI}/account/delete`,
  accountPasskeys: `${UI}/account/passkeys`,
  accountPasskeyRename: `${UI}/account/passkeys/rename`,
  accountPasskeyRemove: `${UI}/account/passkeys/remove`,
  accountIdentities: `${UI}/account/identities`,
  accountIdentityLink: `${UI}/account/identities/link`,
  accountIdentityUnlink: `${UI}/account/identities/unlink`,
  federatedError: `${UI}/federated-error`,
  federatedLink: `${UI}/federated-link`,
  federatedSecondFactor: `${UI}/federated-second-factor`,
} as const;

/** The pages of contract.md#spec-4-6 whose links arrive by email: served at /<page>/... and at /ui/<page>/... */
export const TOKEN_PAGES = ["email-verified", "reset-password", "verify-magic-link", "email-change", "secure-account"] as const;

/** What the "check your email" page says, by the step that sent the email. */
export type EmailSentFor = "registration" | "verification" | "reset" | "magic-link" | "email-change";

/** Fixed notices shown after a redirect (?notice=...): the text never comes from the request. */
export const notices = {
  "email-verified": "Your email address is verified. You can log in now.",
  "email-verified-no-password":
    'Your email address is verified. Your account has no password: log in with a link we email you, or set one with "Forgot your password?".',
  "password-reset": "Your password has been reset. You can log in with the new one.",
  "password-changed": "Your password has been changed.",
  "logged-out": "You have been logged out.",
  "two-factor-disabled": "Two-factor authentication is turned off.",
  "login-required": "Please log in first.",
  "name-changed": "Your name has been changed.",
  "email-changed": "Your email address has been changed.",
  "session-ended": "That session has been signed out.",
  "other-sessions-ended": "You have been signed out everywhere else.",
  "account-deleted": "Your account has been deleted.",
  "passkey-added": "Your passkey has been added. Next time, sign in with it.",
  "passkey-renamed": "The passkey has been renamed.",
  "passkey-removed": "The passkey has been removed.",
  // The federated callback sends `identity-linked` (http/routes/federation.ts); the link page too.
  "identity-linked": "The account is linked. You can now sign in with it.",
  "identity-unlinked": "The account is unlinked. It no longer signs you in here.",
  "account-secured":
    "Your account is secured: every session has ended and every sign-in and reset link we sent is void. Choose a new password to log in again: we email a reset link to your account's address, filled in below.",
  "account-secured-email-kept":
    "Your account is secured: every session has ended and every sign-in and reset link we sent is void. " +
    "Your old email address could not be given back, because another account uses it now: contact the site's support.",
} as const;
export type NoticeKey = keyof typeof notices;

/**
 * contract.md#d26: the address a login link was just asked for, so the "check your email" page can carry it
 * in its code form instead of asking again. A cookie, not the URL: request URLs are logged (and
 * kept in history); this one goes only to that page, for the link's lifetime (rules.ts
 * TOKEN_LIFETIMES_MS.magic_login). Set by the request form's page and by its script (so not HttpOnly).
 */
export const LOGIN_EMAIL_COOKIE = { name: "login_email", path: pagePaths.checkEmail, maxAgeSeconds: TOKEN_LIFETIMES_MS.magic_login / SECOND } as const;

/**
 * hosted-pages.md#magic-link-returnto: the login page's `?returnTo=` (e.g. /oauth/interaction/{uid})
 * when the member asked for a login link or code from there instead of a password, so the link's or
 * the code's page sends them back as the password login does. A cookie, not the emailed link: the link
 * stays the same for everyone, and a return path in it could be swapped by whoever forwards it. Sent
 * only to the pages that finish the login (the code form, both link pages), for the link's lifetime,
 * and read through returnToPath, so it is never more than a path on this site.
 */
export const LOGIN_RETURN_TO_COOKIE = {
  name: "login_return_to",
  paths: [pagePaths.checkEmail, "/verify-magic-link", `${UI}/verify-magic-link`],
  maxAgeSeconds: TOKEN_LIFETIMES_MS.magic_login / SECOND,
} as const;

export function checkEmailPath(sentFor: EmailSentFor): string {
  return `${pagePaths.checkEmail}?for=${sentFor}`;
}

export function withNotice(path: string, notice: NoticeKey): string {
  return `${path}?notice=${notice}`;
}

/**
 * The tenant's loginSuccessRedirect is validated as a same-origin path when it is set; checked
 * again here so a redirect can never leave the site (no `//host`, no backslash tricks).
 */
export function safeRedirectPath(path: string | undefined, fallback: string): string {
  // Printable ASCII only: anything else can't go into a Location header (Node refuses it).
  return path !== undefined && /^\/(?![/\\])[\x21-\x5b\x5d-\x7e]*$/.test(path) ? path : fallback;
}

/** The federated start route's bound for `returnTo` (http/routes/federation.ts): a longer one would be refused there. */
const RETURN_TO_MAX_LENGTH = 2048;

/**
 * A page's `?returnTo=` (the login page's, so a step such as /ui/federated-link can send the member
 * to sign in and come back) when it is a path on this site; else undefined. The server and the
 * script read it the same way.
 */
export function returnToPath(value: unknown): string | undefined {
  if (typeof value !== "string" || value.length > RETURN_TO_MAX_LENGTH) return undefined;
  return safeRedirectPath(value, "") || undefined;
}
