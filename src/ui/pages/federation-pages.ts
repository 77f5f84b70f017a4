/**
 * Federated sign-in in the hosted pages (decisions.md#federated-sign-in): the "Continue with …" links
 * of the login and register pages, and the pages a provider's callback lands on (the error page, the
 * second factor of a 2FA member, the proof before a link). The forms post to their own page, which
 * calls the same flow as the JSON route (http/routes/federation.ts), then 303s. The member's own
 * identities are in identities-page.ts.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import { listConnections } from "../../flows/federation/connections.js";
import type { FederationFailure } from "../../flows/federation/outcomes.js";
import { confirmFederatedLink, describePendingLink, finishFederatedSecondFactor } from "../../flows/federation/pending.js";
import { FEDERATION_COOKIE_FLAGS, PENDING_COOKIE } from "../../http/routes/federation.js";
import { SecondFactorCodeField } from "../../http/schemas.js";
import { setSessionCookie } from "../../http/session-cookie.js";
import { contextOf } from "../../http/tenant.js";
import { FEDERATION_PENDING_LIFETIME_MS } from "../../rules.js";
import { TWO_FACTOR_CODE_HINT } from "../form-errors.js";
import { formValues, maxLengthOf, readFields, type FieldRule } from "../forms.js";
import { html, type Html } from "../html.js";
import { field, form, sendPage, type FormError } from "../layout.js";
import { pagePaths, returnToPath, safeRedirectPath, withNotice } from "../paths.js";
import { findSession, handleForm, loginSuccessPath, page, type PageDeps } from "./common.js";

const hide = { schema: { hide: true } };
const CODE_RULE: FieldRule = { name: "twoFACode", what: "the code", max: maxLengthOf(SecondFactorCodeField) };
/** What each form posted here names in data-latch-form and gives handleForm: one operation, whose words its 429 takes (hosted-pages.md#refusals). */
const OPERATIONS = { secondFactor: "finishFederatedSecondFactor", link: "confirmFederatedLink" } as const;
/** The page's `?returnTo=`, when it is a path on this site the start route also accepts (paths.ts returnToPath). */
export function returnToOf(request: FastifyRequest): string | undefined {
  return returnToPath((request.query as { returnTo?: unknown } | undefined)?.returnTo);
}

/** A path with `?returnTo=` when there is one (the value URI-encoded; the template escapes it for the attribute). */
export function withReturnTo(path: string, returnTo: string | undefined): string {
  return returnTo === undefined ? path : `${path}?returnTo=${encodeURIComponent(returnTo)}`;
}

/**
 * "Continue with {displayName}", one plain link per connection of the tenant (a GET: the start route
 * answers 302 to the provider, which a form post could not follow under the pages' `form-action 'self'`).
 * Nothing when the tenant has none.
 */
export async function continueWithProviders(deps: Deps, request: FastifyRequest, returnTo?: string): Promise<Html> {
  const connections = await listConnections(deps, request.tenant);
  if (connections.length === 0) return html``;
  const items = connections.map(
    (c) =>
      html`<li><a class="button" href="${withReturnTo(`/auth/federated/${encodeURIComponent(c.id)}/start`, returnTo)}">Continue with ${c.displayName}</a></li>`,
  );
  return html`<section aria-labelledby="federated-title">
<h2 id="federated-title">Or continue with</h2>
<ul class="federated">${items}</ul>
</section>`;
}

interface FailureText {
  text: string;
  next: Html;
}

const BACK_TO_LOGIN = html`<a href="${pagePaths.login}">Back to log in</a>`;

/** One text per reason of the callback; a new reason does not compile until it has its words. */
const FAILURE_TEXTS = {
  no_flow: { text: "This sign-in expired or was already used: start again from the sign-in page.", next: BACK_TO_LOGIN },
  provider_error: {
    text: "The provider did not sign you in: the sign-in may have been cancelled or refused there. Try again, or log in another way.",
    next: BACK_TO_LOGIN,
  },
  provider_unreachable: { text: "We could not reach the provider. Please try again in a few minutes, or log in another way.", next: BACK_TO_LOGIN },
  invalid_response: { text: "The provider's answer could not be verified, so it was not used. Start again from the sign-in page.", next: BACK_TO_LOGIN },
  email_not_confirmed: {
    text: "The provider did not confirm your email address, so it cannot make or find an account here. Confirm the address with the provider, or log in another way.",
    next: BACK_TO_LOGIN,
  },
  signup_closed: {
    text: "No account here is linked to this sign-in, and this site does not make new accounts from it. Log in or register another way; you can link the provider from your account afterwards.",
    next: html`<a href="${pagePaths.login}">Back to log in</a> or <a href="${pagePaths.register}">register</a>`,
  },
  domain_not_allowed: {
    text: "This site makes accounts from this provider only for some email domains, and your address is not in one of them.",
    next: BACK_TO_LOGIN,
  },
  account_locked: { text: "Your account is locked. Please contact the site's support.", next: BACK_TO_LOGIN },
  account_pending: {
    text: "Your account is not confirmed yet. Open the confirmation email we sent you, or ask for a new one.",
    next: html`<a href="${pagePaths.resendVerification}">Send the confirmation email again</a>`,
  },
  identity_in_use: {
    text: "That account at the provider is already linked to another account here. Sign in to that account and unlink it there first.",
    next: html`<a href="${pagePaths.accountIdentities}">Back to your linked accounts</a>`,
  },
  try_again: { text: "Something changed while you were signing in. Please try again.", next: BACK_TO_LOGIN },
} satisfies Record<FederationFailure, FailureText>;

const UNKNOWN_FAILURE: FailureText = { text: "The sign-in with the provider did not work. Please start again from the sign-in page.", next: BACK_TO_LOGIN };

/** The words for a reason from the query: only a known reason picks a text, nothing of the query is shown. */
export function federationFailureText(reason: unknown): FailureText {
  return typeof reason === "string" && Object.hasOwn(FAILURE_TEXTS, reason) ? FAILURE_TEXTS[reason as FederationFailure] : UNKNOWN_FAILURE;
}

function failureBody(failure: FailureText): Html {
  return html`<p>${failure.text}</p>
<p>${failure.next}</p>`;
}

const SIGN_IN_FAILED = "Sign-in did not work";

function clearPendingCookie(reply: FastifyReply): void {
  void reply.clearCookie(PENDING_COOKIE.name, { ...FEDERATION_COOKIE_FLAGS, path: PENDING_COOKIE.path });
}

function secondFactorBody(errors: FormError[]): Html {
  return html`<p>Your account uses two-factor authentication.</p>
${form({
  operation: OPERATIONS.secondFactor,
  action: pagePaths.federatedSecondFactor,
  submit: "Verify and log in",
  content: field({ name: "twoFACode", label: "Authentication code", autocomplete: "one-time-code", hint: TWO_FACTOR_CODE_HINT, errors }),
})}
<p><a href="${pagePaths.login}">Log in another way</a></p>`;
}

/** The no-step refusal of the pending flows (flows/federation/pending.ts): the step is gone, so is its form. */
function isNoPendingStep(error: unknown): boolean {
  return error instanceof AuthError && error.code === "federation_failed";
}

type PendingLink = NonNullable<Awaited<ReturnType<typeof describePendingLink>>>;

function linkBody(link: PendingLink, canLink: boolean, signedInElsewhere: boolean): Html {
  const who = link.email === null ? "this email address" : link.email;
  const login = withReturnTo(pagePaths.login, pagePaths.federatedLink);
  const intro = html`<p>An account with <strong>${who}</strong> already exists. Sign in to it to link your ${link.connection} account.</p>`;
  if (canLink) {
    return html`${intro}
${form({ operation: OPERATIONS.link, action: pagePaths.federatedLink, submit: `Link ${link.connection}`, content: html`` })}
<p><a href="${pagePaths.account}">Not now</a></p>`;
  }
  return html`${intro}
${signedInElsewhere ? html`<p>You are signed in to another account, or signed in before you came back from ${link.connection}: sign in again to the account with ${who}.</p>` : ""}
<p><a href="${login}">Sign in to link ${link.connection}</a></p>
<p class="hint">Signing in with an emailed link or a passkey works too: then come back to <a href="${pagePaths.federatedLink}">this page</a> in this browser.</p>`;
}

export async function federationPages(app: FastifyInstance, { deps }: PageDeps): Promise<void> {
  const failurePage = (request: FastifyRequest, failure: FailureText, errors: FormError[] = []) =>
    page(deps, request, { title: SIGN_IN_FAILED, body: failureBody(failure), errors });

  // 200, not 4xx: this is the page every failed callback is sent to, and it is served as asked; the
  // failure was the callback's (logged and audited there). A proxy that swaps 4xx bodies for its own
  // page would also hide the explanation. The step pages without their step are 400, as a dead link's page.
  app.get(pagePaths.federatedError, hide, async (request, reply) =>
    sendPage(reply, 200, failurePage(request, federationFailureText((request.query as { reason?: unknown }).reason))),
  );

  const noStep = FAILURE_TEXTS.no_flow;
  const secondFactorPage = (request: FastifyRequest, errors: FormError[]) =>
    page(deps, request, { title: "Enter your authentication code", body: secondFactorBody(errors), errors });

  app.get(pagePaths.federatedSecondFactor, hide, async (request, reply) =>
    request.cookies[PENDING_COOKIE.name] === undefined
      ? sendPage(reply, 400, failurePage(request, noStep))
      : sendPage(reply, 200, secondFactorPage(request, [])),
  );
  app.post(pagePaths.federatedSecondFactor, hide, async (request, reply) => {
    const values = formValues(request);
    const render = (errors: FormError[], error: unknown) => (isNoPendingStep(error) ? failurePage(request, noStep, errors) : secondFactorPage(request, errors));
    return handleForm(reply, OPERATIONS.secondFactor, ["twoFACode"], render, async () => {
      const { twoFACode } = readFields(values, [CODE_RULE]);
      const input = { pendingCookie: request.cookies[PENDING_COOKIE.name], twoFACode: twoFACode! };
      const done = await finishFederatedSecondFactor(deps, request.tenant, input, contextOf(request));
      clearPendingCookie(reply);
      setSessionCookie(reply, done.session);
      return reply.redirect(safeRedirectPath(done.returnTo ?? undefined, loginSuccessPath(request)), 303);
    });
  });

  const linkPage = async (request: FastifyRequest, errors: FormError[] = []) => {
    const link = await describePendingLink(deps, request.tenant, request.cookies[PENDING_COOKIE.name]);
    if (!link) return { status: 400, html: failurePage(request, noStep, errors) };
    const session = await findSession(deps, request);
    // The flow refuses a session older than the step; one older than any step can't be it.
    const young = session !== undefined && session.createdAt > deps.clock.now() - FEDERATION_PENDING_LIFETIME_MS;
    const canLink = young && session.memberId === link.memberId && errors.length === 0;
    const body = linkBody(link, canLink, session !== undefined && !canLink);
    return { status: 200, html: page(deps, request, { title: `Link your ${link.connection} account`, body, errors, signedIn: session !== undefined }) };
  };

  app.get(pagePaths.federatedLink, hide, async (request, reply) => {
    const shown = await linkPage(request);
    return sendPage(reply, shown.status, shown.html);
  });
  app.post(pagePaths.federatedLink, hide, async (request, reply) => {
    const session = await findSession(deps, request);
    if (!session) return reply.redirect(withReturnTo(pagePaths.login, pagePaths.federatedLink), 303);
    const render = async (errors: FormError[]) => (await linkPage(request, errors)).html;
    return handleForm(reply, OPERATIONS.link, [], render, async () => {
      await confirmFederatedLink(deps, request.tenant, session, { pendingCookie: request.cookies[PENDING_COOKIE.name] }, contextOf(request));
      clearPendingCookie(reply);
      return reply.redirect(withNotice(pagePaths.accountIdentities, "identity-linked"), 303);
    });
  });
}
