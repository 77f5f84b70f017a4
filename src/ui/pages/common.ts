/** What every page module shares: the context a handler works in and the form-post pattern (PRG). */
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import { findActiveSession, type ActiveSession } from "../../flows/kernel/sessions.js";
import { logRefusalFields } from "../../http/errors.js";
import { SESSION_COOKIE } from "../../http/tenant.js";
import type { Html } from "../html.js";
import { renderPage, sendPage, type FormError, type PageInput } from "../layout.js";
import { formErrorsOf, formValues, statusOf } from "../forms.js";
import { refusalFor } from "../refusals.js";
import { LOGIN_EMAIL_COOKIE, LOGIN_RETURN_TO_COOKIE, notices, pagePaths, returnToPath, safeRedirectPath, withNotice, type NoticeKey } from "../paths.js";

export interface PageDeps {
  deps: Deps;
}

export function noticeOf(request: FastifyRequest): string | undefined {
  const key = (request.query as { notice?: unknown } | undefined)?.notice;
  return typeof key === "string" && Object.hasOwn(notices, key) ? notices[key as NoticeKey] : undefined;
}

/**
 * The session each request of the hosted pages came with, read once by markSignedIn (undefined: no
 * live session). A handler's findSession takes it from here instead of reading it again: every flow
 * that ends or replaces the session answers with a 303, so no page of the same request needs a newer one.
 */
const requestSessions = new WeakMap<FastifyRequest, ActiveSession | undefined>();

/**
 * hosted-pages.md#signed-in-state: every page knows whether its reader is signed in, not only the
 * pages behind the session (the "check your email" page after an email change, the login page after
 * a login). A hook of the pages' scope; a request without the session cookie costs no store read.
 */
export async function markSignedIn(deps: Deps, request: FastifyRequest): Promise<void> {
  requestSessions.set(request, await findActiveSession(deps, request.tenant, request.cookies[SESSION_COOKIE]));
}

/** The request came with a live session (markSignedIn ran in the pages' scope). */
export function isSignedIn(request: FastifyRequest): boolean {
  return requestSessions.get(request) !== undefined;
}

/** The page frame with what every page of this request shares (tenant, dev inbox link, signed in or not; in dev mode, a refusal's dev note). */
export function page(deps: Deps, request: FastifyRequest, input: Omit<PageInput, "tenant">): Html {
  const devMode = deps.dev !== undefined;
  const errors = input.errors?.map(({ devNote, ...error }) => (devMode && devNote ? { ...error, message: `${error.message} ${devNote}` } : error));
  return renderPage({ tenant: request.tenant, devInbox: devMode, signedIn: isSignedIn(request), ...input, errors });
}

/**
 * A 429 as the form's error: the reason, the wait from Retry-After, the ways on. Worded by the
 * operation of the form that was posted, the one its data-latch-form names for the script, so a
 * refusal reads the same with and without JavaScript (hosted-pages.md#refusals).
 */
function refusalError(request: FastifyRequest, operation: string, error: AuthError): FormError {
  const words = refusalFor({
    operation,
    retryAfterSeconds: error.retryAfterSeconds,
    secondFactorStep: "twoFACode" in formValues(request),
  });
  return { code: error.code, message: words.message, next: words.next, ...(words.devNote ? { devNote: words.devNote } : {}) };
}

/** The request's live session: the one markSignedIn read, or read now outside the pages' scope. */
export async function findSession(deps: Deps, request: FastifyRequest): Promise<ActiveSession | undefined> {
  if (requestSessions.has(request)) return requestSessions.get(request);
  return findActiveSession(deps, request.tenant, request.cookies[SESSION_COOKIE]);
}

/** Where a login on the pages lands: the tenant's loginSuccessRedirect when it is a same-origin path. */
export function loginSuccessPath(request: FastifyRequest): string {
  return safeRedirectPath(request.tenant.settings.loginSuccessRedirect, pagePaths.account);
}

const loginEmailCookieFlags = { path: LOGIN_EMAIL_COOKIE.path, secure: true, sameSite: "strict", httpOnly: false } as const;

/** contract.md#d26: kept for the "check your email" page's code form (paths.ts says why a cookie). */
export function rememberLoginEmail(reply: FastifyReply, email: string): void {
  void reply.setCookie(LOGIN_EMAIL_COOKIE.name, email, { ...loginEmailCookieFlags, maxAge: LOGIN_EMAIL_COOKIE.maxAgeSeconds });
}

/** hosted-pages.md#every-page-has-a-next-step: after "This wasn't me", the forgot-password page fills in the address the account has now. */
export function rememberResetEmail(reply: FastifyReply, email: string): void {
  void reply.setCookie(LOGIN_EMAIL_COOKIE.name, email, { ...loginEmailCookieFlags, path: pagePaths.forgotPassword, maxAge: LOGIN_EMAIL_COOKIE.maxAgeSeconds });
}

/**
 * hosted-pages.md#login-email-after-verification: the address a verification link just confirmed,
 * for the page the member goes to next (the login page, or the login-link page of an account
 * without a password) to fill in. Set only by the verification form's successful post, never from
 * the URL; HttpOnly, as only the server reads it; Strict and scoped to that one page, like login_email.
 */
export function rememberVerifiedEmail(reply: FastifyReply, path: string, email: string): void {
  void reply.setCookie(LOGIN_EMAIL_COOKIE.name, email, { ...loginEmailCookieFlags, httpOnly: true, path, maxAge: LOGIN_EMAIL_COOKIE.maxAgeSeconds });
}

export function forgetLoginEmail(reply: FastifyReply): void {
  void reply.clearCookie(LOGIN_EMAIL_COOKIE.name, loginEmailCookieFlags);
}

const returnToCookieFlags = { secure: true, sameSite: "strict", httpOnly: false } as const;

/**
 * hosted-pages.md#magic-link-returnto: where a login by the link or code just asked for goes back to
 * (the login page's returnTo), or none: a request without one clears an older one.
 */
export function rememberLoginReturnTo(reply: FastifyReply, returnTo: string | undefined): void {
  for (const path of LOGIN_RETURN_TO_COOKIE.paths) {
    if (returnTo === undefined) void reply.clearCookie(LOGIN_RETURN_TO_COOKIE.name, { ...returnToCookieFlags, path });
    else void reply.setCookie(LOGIN_RETURN_TO_COOKIE.name, returnTo, { ...returnToCookieFlags, path, maxAge: LOGIN_RETURN_TO_COOKIE.maxAgeSeconds });
  }
}

/** Where a login by link or emailed code lands: the remembered returnTo when it is a path on this site, else loginSuccessPath. Forgets it. */
export function magicLoginSuccessPath(request: FastifyRequest, reply: FastifyReply): string {
  const returnTo = returnToPath(request.cookies[LOGIN_RETURN_TO_COOKIE.name]);
  if (request.cookies[LOGIN_RETURN_TO_COOKIE.name] !== undefined) rememberLoginReturnTo(reply, undefined);
  return returnTo ?? loginSuccessPath(request);
}

/** The remembered address, if it can be one (it came from the browser: the page escapes it). */
export function rememberedLoginEmail(request: FastifyRequest, maxLength: number): string | undefined {
  const email = request.cookies[LOGIN_EMAIL_COOKIE.name];
  return email !== undefined && email !== "" && email.length <= maxLength ? email : undefined;
}

/** Pages behind the session: without one, the login page (303, so a POST is not repeated). */
export async function withSession(
  deps: Deps,
  request: FastifyRequest,
  reply: FastifyReply,
  handle: (session: ActiveSession) => Promise<FastifyReply>,
): Promise<FastifyReply> {
  const session = await findSession(deps, request);
  if (!session) return reply.redirect(withNotice(pagePaths.login, "login-required"), 303);
  return handle(session);
}

/**
 * Runs a form's flow. Success: whatever `submit` answers (usually a 303 redirect: post, redirect,
 * get). A refusal the member can act on: the same form again, with the errors and the flow's status.
 * `operation` is the posted form's (the value its page module gives `form()`): a 429 takes its words.
 */
export async function handleForm(
  reply: FastifyReply,
  operation: string,
  fieldsInForm: string[],
  render: (errors: FormError[], error: unknown) => Html | Promise<Html>,
  submit: () => Promise<FastifyReply>,
): Promise<FastifyReply> {
  try {
    return await submit();
  } catch (error) {
    const errors =
      error instanceof AuthError && error.code === "rate_limited" ? [refusalError(reply.request, operation, error)] : formErrorsOf(error, fieldsInForm);
    if (error instanceof AuthError) logRefusalFields(reply.request, error);
    if (error instanceof AuthError && error.retryAfterSeconds !== undefined) void reply.header("retry-after", String(error.retryAfterSeconds));
    return sendPage(reply, statusOf(error), await render(errors, error));
  }
}
