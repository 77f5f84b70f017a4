/**
 * Progressive enhancement of the hosted pages' forms: a form marked data-latch-form="<operation>"
 * is sent through the JSON API with the SDK instead of a page load; a refusal shows in the page,
 * success goes where the server path would. Forms whose operation is not listed here (2FA
 * enrolment, logout, the verification link's, whose post also tells the login page the address:
 * hosted-pages.md#login-email-after-verification) keep their plain post: the server renders what they show.
 */
import { createLatchClient, isLatchError, type LatchClient } from "../../../packages/client/src/index.js";
import { fieldForError, formErrorForCode, messageForError, TWO_FACTOR_CODE_HINT } from "../form-errors.js";
import { refusalFor } from "../refusals.js";
import { checkEmailPath, LOGIN_EMAIL_COOKIE, LOGIN_RETURN_TO_COOKIE, pagePaths, returnToPath, safeRedirectPath, withNotice } from "../paths.js";
import { clearErrors, showErrors } from "./error-display.js";
import { addPasskey, offerPasskeyAutofill, PasskeyStepFailed, revealPasskeyForms, signInWithPasskey } from "./passkeys.js";

type Fields = Record<string, string>;
/** The next page, or "code" when the member must now give a second-factor code. */
type Outcome = string | "code";

interface AltchaWidget extends HTMLElement {
  reset?: () => void;
}

/** The record id and token are the last two segments of a link page's own URL (never in the page). */
function linkFromLocation(): { recordId: string; token: string } {
  const [recordId = "", token = ""] = window.location.pathname.split("/").filter(Boolean).slice(-2).map(decodeURIComponent);
  return { recordId, token };
}

/** contract.md#d26: the address a link was asked for, kept for the next page's code form as the server path keeps it (paths.ts). */
function writeLoginEmailCookie(email: string, maxAgeSeconds: number): void {
  const { name, path } = LOGIN_EMAIL_COOKIE;
  document.cookie = `${name}=${encodeURIComponent(email)}; path=${path}; max-age=${maxAgeSeconds}; samesite=strict; secure`;
}

/** hosted-pages.md#magic-link-returnto: the page's returnTo, kept for the pages that finish a login by link or code, as the server path keeps it; or cleared. */
function writeLoginReturnToCookie(returnTo: string | undefined): void {
  const { name, paths, maxAgeSeconds } = LOGIN_RETURN_TO_COOKIE;
  for (const path of paths)
    document.cookie = `${name}=${encodeURIComponent(returnTo ?? "")}; path=${path}; max-age=${returnTo === undefined ? 0 : maxAgeSeconds}; samesite=strict; secure`;
}

/** Where a login by link or code goes: the remembered returnTo (a path on this site, checked again), else the API's redirect. Forgets it. */
function magicLoginDestination(redirect: string | undefined): string {
  const raw = document.cookie
    .split("; ")
    .find((c) => c.startsWith(`${LOGIN_RETURN_TO_COOKIE.name}=`))
    ?.slice(LOGIN_RETURN_TO_COOKIE.name.length + 1);
  const returnTo = returnToPath(raw === undefined ? undefined : decodeURIComponent(raw));
  if (raw !== undefined) writeLoginReturnToCookie(undefined);
  return returnTo ?? safeRedirectPath(redirect, pagePaths.account);
}

/** The login page's `?returnTo=` (a path on this site), where the server path would also go. */
function pageReturnTo(): string | undefined {
  return returnToPath(new URLSearchParams(window.location.search).get("returnTo") ?? undefined);
}

// The fields are the form's inputs, named as the API's body fields (the server renders them so);
// the API validates them, so the casts only bridge FormData's strings to the SDK's body types.
const submitters: Record<string, (client: LatchClient, fields: Fields) => Promise<Outcome>> = {
  registerWithPassword: async (c, f) => (await c.registerWithPassword(f as never), checkEmailPath("registration")),
  registerWithMagicLink: async (c, f) => (await c.registerWithMagicLink(f as never), checkEmailPath("registration")),
  resendVerification: async (c, f) => (await c.resendVerification(f as never), checkEmailPath("verification")),
  requestPasswordReset: async (c, f) => (await c.requestPasswordReset(f as never), checkEmailPath("reset")),
  requestMagicLink: async (c, f) => (
    await c.requestMagicLink(f as never),
    writeLoginEmailCookie((f.email ?? "").trim(), LOGIN_EMAIL_COOKIE.maxAgeSeconds),
    writeLoginReturnToCookie(pageReturnTo()),
    checkEmailPath("magic-link")
  ),
  changePassword: async (c, f) => (await c.changePassword(f as never), withNotice(pagePaths.account, "password-changed")),
  resetPassword: async (c, f) => (
    await c.resetPassword({ ...linkFromLocation(), newPassword: f.newPassword ?? "" }),
    withNotice(pagePaths.login, "password-reset")
  ),
  loginWithPassword: async (c, f) => {
    const result = await c.loginWithPassword(f as never);
    return result.authorized ? (pageReturnTo() ?? safeRedirectPath(result.redirectUrl, pagePaths.account)) : "code";
  },
  verifyMagicLink: async (c, f) => {
    const { recordId, token } = linkFromLocation();
    const result = await c.verifyMagicLink(recordId, token, f);
    return result.success ? magicLoginDestination(result.redirect) : "code";
  },
  addPasskey,
  passkeyLogin: signInWithPasskey,
  verifyLoginCode: async (c, f) => {
    const result = await c.verifyLoginCode(f as never);
    if (!result.success) return "code";
    writeLoginEmailCookie("", 0);
    return magicLoginDestination(result.redirect);
  },
};

/** The form's string fields; an empty optional code is left out (the API wants it absent, not ""). */
function fieldsOf(form: HTMLFormElement): Fields {
  const fields: Fields = {};
  for (const [name, value] of new FormData(form)) if (typeof value === "string") fields[name] = value;
  if (fields.twoFACode === "") delete fields.twoFACode;
  return fields;
}

/** The second-factor step in place: a code field appears and takes focus (the server path renders a new page). */
function askForCode(form: HTMLFormElement, summary: HTMLElement | null): void {
  clearErrors(form, summary);
  let input = form.querySelector<HTMLInputElement>("#twoFACode");
  if (!input) {
    const wrapper = document.createElement("div");
    wrapper.className = "field";
    wrapper.innerHTML =
      '<label for="twoFACode">Authentication code</label>' +
      `<p class="hint" id="twoFACode-hint">${TWO_FACTOR_CODE_HINT}</p>` +
      '<input id="twoFACode" name="twoFACode" type="text" autocomplete="one-time-code" required aria-describedby="twoFACode-hint">';
    (form.querySelector(".bot") ?? form.querySelector(".actions"))!.before(wrapper);
    input = wrapper.querySelector("input")!;
  }
  // The step's page, as the server renders it: no notice of the page before (say, "You have been
  // logged out"), no email and password fields (they stay in the form, hidden, and are sent again).
  document.querySelector("main .notice")?.remove();
  for (const name of ["email", "password"]) {
    const wrapper = form.querySelector(`#${name}`)?.closest<HTMLElement>(".field");
    if (wrapper) wrapper.hidden = true;
  }
  const title = document.querySelector("main h1");
  if (title) title.textContent = "Enter your authentication code";
  document.title = document.title.replace(/^(Error: )?[^·]*·/, "Enter your authentication code ·");
  const status = document.getElementById("form-status");
  if (status) status.textContent = "Your account uses two-factor authentication. Enter your code.";
  input.focus();
}

async function submitEnhanced(client: LatchClient, form: HTMLFormElement, submit: (c: LatchClient, f: Fields) => Promise<Outcome>): Promise<void> {
  const summary = document.getElementById("error-summary");
  const button = form.querySelector<HTMLButtonElement>('button[type="submit"]');
  if (button) button.disabled = true;
  let outcome: Outcome | undefined;
  let refusal: unknown;
  try {
    outcome = await submit(client, fieldsOf(form));
  } catch (error) {
    if (error instanceof PasskeyStepFailed) {
      // Neither passkey form has a bot widget (hosted-pages.md#one-bot-check): the button took the page's answer.
      if (button) button.disabled = false;
      return showErrors(form, summary, [{ message: error.message }]);
    }
    if (!isLatchError(error)) throw error;
    refusal = error;
  }
  if (outcome !== undefined && outcome !== "code") {
    window.location.assign(outcome);
    return;
  }
  if (button) button.disabled = false;
  // A bot-check solution is good for one request: solve anew before the member tries again
  // (reset first, so the focus moved below starts the widget's next proof of work).
  form.querySelector<AltchaWidget>("altcha-widget")?.reset?.();
  if (outcome === "code") return askForCode(form, summary);
  showRefusal(form, summary, refusal);
}

/** A refusal of the API shown in the form: the page's own words for its code where it has them, else the service's. */
function showRefusal(form: HTMLFormElement, summary: HTMLElement | null, refusal: unknown): void {
  if (!isLatchError(refusal)) return;
  const operation = form.dataset.latchForm ?? "";
  if (refusal.code === "rate_limited") return showRateLimited(form, summary, operation, refusal.retryAfterSeconds);
  const own = formErrorForCode(operation, refusal.code);
  if (own) return showErrors(form, summary, [own]);
  const fieldNames = [...form.elements].map((e) => (e as HTMLInputElement).name).filter(Boolean);
  const field = fieldForError(refusal.code, refusal.details, fieldNames);
  const message =
    refusal.code === "network_error"
      ? "The service could not be reached. Check your connection and try again."
      : messageForError(refusal.code, refusal.message, refusal.details);
  showErrors(form, summary, [{ ...(field ? { field } : {}), message }]);
}

/**
 * hosted-pages.md#refusals: a 429 in the words the server page uses (refusals.ts), with the wait from
 * Retry-After. Dev mode is read from the page: only a dev-mode page links to the dev inbox.
 */
function showRateLimited(form: HTMLFormElement, summary: HTMLElement | null, operation: string, retryAfterSeconds: number | undefined): void {
  const secondFactorStep = form.querySelector("#twoFACode") !== null;
  const words = refusalFor({ operation, retryAfterSeconds, secondFactorStep });
  const devMode = document.querySelector('a[href="/dev/inbox"]') !== null;
  // The cooldown's way on is the code form of the email already sent: it needs the address, as after a request.
  if (operation === "requestMagicLink") {
    const email = form.querySelector<HTMLInputElement>("#email")?.value.trim() ?? "";
    if (email !== "") writeLoginEmailCookie(email, LOGIN_EMAIL_COOKIE.maxAgeSeconds);
  }
  showErrors(form, summary, [{ message: devMode && words.devNote ? `${words.message} ${words.devNote}` : words.message, next: words.next }]);
}

export function enhanceForms(root: Document): void {
  revealPasskeyForms(root);
  const client = createLatchClient();
  for (const form of root.querySelectorAll<HTMLFormElement>("form[data-latch-form]")) {
    const submit = submitters[form.dataset.latchForm ?? ""];
    if (!submit) continue;
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      void submitEnhanced(client, form, submit);
    });
  }
  void offerPasskeyAutofill(root, client, (form, error) => showRefusal(form, document.getElementById("error-summary"), error));
}
