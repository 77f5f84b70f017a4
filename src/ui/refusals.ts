/**
 * hosted-pages.md#refusals: the one way every hosted page words a 429 (rate limit, cooldown or
 * lockout). The reason, the wait in words (from the answer's Retry-After) and what can be done now,
 * picked by the form's operation and step, never by the API's message. Shared by the server pages
 * and the browser script (no Node imports), so a refusal reads the same with and without JavaScript.
 * No refusal says whether an account exists: every limit counts known and unknown emails alike, and
 * the words are the same for both.
 */
import { MINUTE, SECOND } from "../core/durations.js";
import { describeDuration, LOGIN_CODE_DIGITS, rateRules, TWO_FACTOR_LOCKOUT_MS } from "../rules.js";
import { checkEmailPath, pagePaths } from "./paths.js";

export interface NextStep {
  href: string;
  text: string;
}

/** What a refused form shows: one sentence block in the error summary, and the links under it. */
export interface RefusalWords {
  message: string;
  next: NextStep[];
  /** Shown in dev mode only (a developer's own machine): the setting that lifts the limit. */
  devNote?: string;
}

export interface RefusalContext {
  /** The form's operation (its data-latch-form). */
  operation: string;
  /** From Retry-After: whole seconds. */
  retryAfterSeconds: number | undefined;
  /** The form was the second-factor step of a login (a code field was posted). */
  secondFactorStep?: boolean;
}

/**
 * A wait in words: "a few seconds", "about a minute", "about 45 minutes", "about an hour",
 * "about 4 hours", "about 7 days". Past ten minutes the minutes are rounded to fives: a count
 * down to the minute reads as a promise the page cannot keep (it is not refreshed).
 */
export function describeWait(seconds: number | undefined): string {
  if (seconds === undefined || !Number.isFinite(seconds) || seconds < 0) return "a few minutes";
  if (seconds <= 30) return "a few seconds";
  const minutes = Math.round((seconds * SECOND) / MINUTE);
  if (minutes <= 1) return "about a minute";
  if (minutes <= 10) return `about ${minutes} minutes`;
  if (minutes < 55) return `about ${Math.round(minutes / 5) * 5} minutes`;
  if (minutes < 90) return "about an hour";
  const hours = Math.round(minutes / 60);
  if (hours < 36) return `about ${hours} hours`;
  return `about ${Math.round(hours / 24)} days`;
}

const MAGIC_LINK_COOLDOWN = describeDuration(rateRules.magicLinkCooldown.windowMs);

/** The "check your email" page's words after a link was asked for: when another one can be (hosted-pages.md#refusals). */
export const NEXT_LINK_AFTER = `If it does not arrive, you can ask for another link after ${MAGIC_LINK_COOLDOWN}: one link per address every ${MAGIC_LINK_COOLDOWN}.`;

const links = {
  magicLink: { href: pagePaths.magicLink, text: "Email me a login link instead" },
  resetPassword: { href: pagePaths.forgotPassword, text: "Reset your password by email" },
  enterCode: { href: checkEmailPath("magic-link"), text: `Enter the ${LOGIN_CODE_DIGITS}-digit code from the email` },
  passwordLogin: { href: pagePaths.login, text: "Log in with a password" },
  login: { href: pagePaths.login, text: "Log in, if you already have an account" },
  resend: { href: pagePaths.resendVerification, text: "Send the confirmation email again" },
  newLink: { href: pagePaths.magicLink, text: "Request a new login link" },
  startAgain: { href: pagePaths.login, text: "Back to log in" },
} satisfies Record<string, NextStep>;

/** Dev mode: the setting that lifts the request limits (src/config.ts RATE_LIMITS); never shown to members of a real tenant. */
export const DEV_LIMITS_NOTE =
  "Dev mode: these are Latch's request limits; restart the server with RATE_LIMITS=off to lift them while you test (lockouts stay).";

const SECOND_FACTOR_OPERATIONS = new Set(["loginWithPassword", "verifyMagicLink", "verifyLoginCode", "finishFederatedSecondFactor"]);

/** The words for a 429 of `operation`: always a reason and a wait, and the ways on that are open now. */
export function refusalFor(context: RefusalContext): RefusalWords {
  const wait = describeWait(context.retryAfterSeconds);
  if (context.secondFactorStep && SECOND_FACTOR_OPERATIONS.has(context.operation)) {
    return {
      message:
        `Too many incorrect authentication codes: codes for this account are paused for ${wait} ` +
        `(each lockout lasts ${describeDuration(TWO_FACTOR_LOCKOUT_MS)}). Try again then, with a new code from your app or a recovery code.`,
      next: [links.startAgain],
    };
  }
  switch (context.operation) {
    case "loginWithPassword":
      return {
        message: `Too many failed password attempts for this email address: logging in with a password is paused for ${wait}. You can still log in by email now.`,
        next: [links.magicLink, links.resetPassword],
      };
    case "requestMagicLink":
      return {
        message:
          `If an account exists for that email, a login link was sent to it in the last few minutes. ` +
          `Check your inbox: open the link, or enter the ${LOGIN_CODE_DIGITS}-digit code from that email. You can ask for another link in ${wait}.`,
        next: [links.enterCode, links.passwordLogin],
      };
    case "verifyLoginCode":
      return {
        message: `Too many codes tried for this email address. Use the link in the email, or ask for a new link in ${wait}.`,
        next: [links.newLink],
      };
    case "registerWithPassword":
    case "registerWithMagicLink":
      return {
        message:
          `Too many registrations from this network or for this email address: at most ${rateRules.registerPerIp.limit} an hour from one network ` +
          `and ${rateRules.registerPerEmail.limit} for one address. You can register again in ${wait}.`,
        next: [links.login, links.resend],
        devNote: DEV_LIMITS_NOTE,
      };
    case "resendVerification":
      return {
        message:
          "If an account with that email is waiting for verification, a confirmation email was sent to it in the last few minutes. " +
          `Check your inbox and spam folder. You can ask for another in ${wait}.`,
        next: [links.startAgain],
      };
    case "requestPasswordReset":
      return {
        message: `Too many reset requests from this network or for this email address. If a reset link was sent, it is in your inbox. You can ask again in ${wait}.`,
        next: [links.magicLink],
      };
    case "changePassword":
      return {
        message: `Too many wrong passwords for this account: password checks are paused for ${wait}.`,
        next: [links.resetPassword],
      };
    case "changeEmail":
      return {
        message: `You have asked to change your email address ${rateRules.changeEmailPerMember.limit} times in the last hour, the most allowed. You can ask again in ${wait}.`,
        next: [],
      };
    case "disableTwoFactor":
    case "regenerateRecoveryCodes":
    case "setUpTwoFactor":
    case "deleteAccount":
    case "startIdentityLink":
    case "unlinkIdentity":
      return { message: `Too many wrong passwords or codes for this account: checks are paused for ${wait}.`, next: [] };
    case "passkeyLogin":
      return { message: `Too many passkey sign-ins from this network. You can try again in ${wait}.`, next: [links.passwordLogin, links.magicLink] };
    default:
      return { message: `Too many attempts. You can try again in ${wait}.`, next: [] };
  }
}
