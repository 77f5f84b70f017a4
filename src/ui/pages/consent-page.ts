/**
 * The OpenID Provider's interaction (decisions.md#openid-provider-interaction): `/oauth/interaction/{uid}`,
 * where an authorization request meets the member's Latch session. Without one, the login page and
 * back (`returnTo`); with one, a first-party client goes on at once, a third-party client gets the
 * consent page (Allow / Deny). And the pages the library itself renders: its errors and the
 * RP-initiated logout confirmation (decisions.md#openid-provider-logout).
 *
 * Moving on is a 200 page that refreshes to the authorization endpoint, never a redirect: Chrome
 * holds a redirect chain that follows a form post to the page's CSP `form-action 'self'`, and the
 * chain would end at the client's origin (the login form, or the consent form, was the post).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import { isHeldBack, type ActiveSession } from "../../flows/kernel/sessions.js";
import { approveInteraction, consentRequestOf, denyInteraction, mustSignInAgain, type ConsentRequest } from "../../flows/oidc/interaction.js";
import { INTERACTION_PATH, oidcProviders, type OidcPageHooks } from "../../flows/oidc/provider.js";
import type { Tenant } from "../../model.js";
import type { InteractionResult, OidcProvider } from "../../providers/oidc-provider.js";
import { formValues } from "../forms.js";
import { html, raw, type Html } from "../html.js";
import { renderPage, sendPage } from "../layout.js";
import { pagePaths } from "../paths.js";
import { findSession, page, type PageDeps } from "./common.js";

const hide = { schema: { hide: true } };

/** What each scope lets the application do, as the consent page says it. */
const SCOPE_WORDS: Record<string, string> = {
  openid: "Know who you are on this site (your account number)",
  email: "See your email address, and whether it is verified",
  profile: "See your name",
  offline_access: "Stay signed in for you when you are not using it",
};

function interactionPath(uid: string): string {
  return `${INTERACTION_PATH}/${uid}`;
}

function consentBody(uid: string, request: ConsentRequest): Html {
  return html`<p><strong>${request.client.name}</strong> asks to use your account on this site. If you allow it, it can:</p>
<ul>${request.scopes.map((scope) => html`<li>${SCOPE_WORDS[scope] ?? scope}</li>`)}</ul>
<form method="post" action="${interactionPath(uid)}" aria-labelledby="consent-question">
<p id="consent-question">Allow ${request.client.name} to do this?</p>
<div class="actions"><button type="submit" name="decision" value="allow">Allow</button> <button type="submit" name="decision" value="deny" class="secondary">Deny</button></div>
</form>`;
}

/** A 200 page that moves the browser on (Refresh header, and a link for those who turned it off). */
function sendContinue(deps: Deps, request: FastifyRequest, reply: FastifyReply, to: string): FastifyReply {
  const body = html`<p>Taking you back to the application.</p><p><a href="${to}">Continue</a></p>`;
  void reply.header("refresh", `0; url=${to}`);
  return sendPage(reply, 200, page(deps, request, { title: "Signed in", body }));
}

/**
 * decisions.md#held-back-sessions: a session that must first change its password or turn on the required 2FA signs in to
 * no application. The page says what to do, and leads back to this interaction (it lives 30 minutes) once it is done.
 */
function sendHeldBack(deps: Deps, request: FastifyRequest, reply: FastifyReply, uid: string, clientName: string, session: ActiveSession): FastifyReply {
  const first = session.data.passwordChangePending
    ? html`<a href="${pagePaths.changePassword}">change your password</a>`
    : html`<a href="${pagePaths.twoFactor}">turn on two-factor authentication</a>`;
  const body = html`<p>Before you sign in to <strong>${clientName}</strong>, this site asks you to ${first}.</p>
<p>Then <a href="${interactionPath(uid)}">continue to ${clientName}</a>.</p>`;
  return sendPage(reply, 403, page(deps, request, { title: `One step before ${clientName}`, body, signedIn: true }));
}

function sendExpired(deps: Deps, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const body = html`<p>Go back to the application and sign in again.</p>`;
  return sendPage(reply, 400, page(deps, request, { title: "This sign-in has expired", body }));
}

/** The library's pages, framed as Latch's (the logout confirmation has the library's form and its xsrf field). */
export const oidcPageHooks: OidcPageHooks = {
  renderError(tenant: Tenant, out) {
    const body = html`<p>The application sent a request this site cannot accept, so you were not sent back to it.</p>
<p><code>${out.error}</code>${out.error_description ? html`: ${out.error_description}` : ""}</p>`;
    return renderPage({ tenant, title: "Sign-in request refused", body }).html;
  },
  logoutSource(tenant: Tenant, form: string, clientName: string | undefined) {
    // The library's form is `<form id="op.logoutForm" …><input type="hidden" name="xsrf" …></form>`, built from its own values.
    const body = html`${raw(form)}<p>${clientName ? html`<strong>${clientName}</strong> asks to sign you out.` : "An application asks to sign you out."} \
Signing out ends your session on ${tenant.domain} too.</p>
<div class="actions"><button type="submit" form="op.logoutForm" name="logout" value="yes">Sign out</button> \
<button type="submit" form="op.logoutForm" class="secondary">Stay signed in</button></div>`;
    return renderPage({ tenant, title: "Sign out?", body }).html;
  },
  postLogoutSuccessSource(tenant: Tenant, clientName: string | undefined) {
    const body = html`<p>${clientName ? html`You signed out of ${clientName} and of ${tenant.domain}.` : html`You signed out of ${tenant.domain}.`}</p>
<p><a href="${pagePaths.login}">Sign in again</a></p>`;
    return renderPage({ tenant, title: "You are signed out", body }).html;
  },
};

async function interactionOf(provider: OidcProvider, uid: string, req: IncomingMessage, res: ServerResponse) {
  try {
    const details = await provider.interactionDetails(req, res);
    return details.uid === uid ? details : undefined;
  } catch {
    // No interaction cookie, or the interaction expired: the person starts again from the application.
    return undefined;
  }
}

export async function consentPages(app: FastifyInstance, { deps }: PageDeps): Promise<void> {
  const providers = oidcProviders(deps, oidcPageHooks);

  const handle = async (request: FastifyRequest<{ Params: { uid: string } }>, reply: FastifyReply, post: boolean): Promise<FastifyReply> => {
    const { uid } = request.params;
    if (!/^[\w-]{1,64}$/.test(uid)) return sendExpired(deps, request, reply);
    const { provider } = await providers.forTenant(request.tenant);
    const details = await interactionOf(provider, uid, request.raw, reply.raw);
    if (!details) return sendExpired(deps, request, reply);
    const finish = async (result: InteractionResult) =>
      sendContinue(deps, request, reply, await provider.interactionResult(request.raw, reply.raw, result, { mergeWithLastSubmission: false }));

    const session = await findSession(deps, request);
    // No session, or (prompt=login, max_age) one opened before this interaction asked for a new sign-in: the member signs in (again) and comes back.
    if (!session || (await mustSignInAgain(deps, request.tenant, details, session))) {
      return reply.redirect(`${pagePaths.login}?returnTo=${encodeURIComponent(interactionPath(uid))}`, 303);
    }
    const consent = await consentRequestOf(deps, request.tenant, details);
    if (isHeldBack(session)) return sendHeldBack(deps, request, reply, uid, consent.client.name, session);
    if (!consent.client.firstParty) {
      if (!post) return sendPage(reply, 200, page(deps, request, { title: `Allow ${consent.client.name}?`, body: consentBody(uid, consent), signedIn: true }));
      const decision = formValues(request).decision;
      if (decision === "deny") return finish(denyInteraction());
      if (decision !== "allow") throw new AuthError("validation_failed", { message: "Choose Allow or Deny." });
    }
    return finish(await approveInteraction(deps, request.tenant, provider, details, consent, session));
  };

  app.get<{ Params: { uid: string } }>(`${INTERACTION_PATH}/:uid`, hide, (request, reply) => handle(request, reply, false));
  app.post<{ Params: { uid: string } }>(`${INTERACTION_PATH}/:uid`, hide, (request, reply) => handle(request, reply, true));
}
