/**
 * The member's linked identities in the hosted pages (decisions.md#federated-sign-in): the list, and
 * a confirmation page to link another or to unlink one, each re-authenticated as the other account
 * pages are (contract.md#d24). One page per action, as "Delete your account": a password field per
 * list item would repeat the field's id on one page and ask for the password many times.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { getMe, type MeView } from "../../flows/account/self-service.js";
import { listConnections, type ConnectionView } from "../../flows/federation/connections.js";
import { listIdentities, startIdentityLink, unlinkIdentity, type IdentityView } from "../../flows/federation/identities.js";
import type { ActiveSession } from "../../flows/kernel/sessions.js";
import { setFlowCookie } from "../../http/routes/federation.js";
import { contextOf } from "../../http/tenant.js";
import { formValues } from "../forms.js";
import { html, type Html } from "../html.js";
import { form, hidden, sendPage, type FormError } from "../layout.js";
import { pagePaths, withNotice } from "../paths.js";
import { handleForm, noticeOf, page, withSession, type PageDeps } from "./common.js";
import { readReauth, reauthFields, time } from "./self-service-pages.js";

const hide = { schema: { hide: true } };
const TITLE = "Linked accounts";
const BACK = html`<p><a href="${pagePaths.accountIdentities}">Back to your linked accounts</a></p>`;
const REAUTH_FIELDS = ["password", "twoFACode"];
/** What each form posted here names in data-latch-form and gives handleForm: one operation, whose words its 429 takes (hosted-pages.md#refusals). */
const OPERATIONS = { link: "startIdentityLink", unlink: "unlinkIdentity" } as const;

function identityItem(identity: IdentityView): Html {
  const unlink = `${pagePaths.accountIdentityUnlink}?id=${encodeURIComponent(identity.id)}`;
  return html`<li>
<p><strong>${identity.displayName}</strong></p>
<p class="hint">${identity.email ?? "No email address given"}. Linked ${time(identity.createdAt)}; \
${identity.lastUsedAt ? html`last used ${time(identity.lastUsedAt)}` : "not used to sign in yet"}.</p>
<p><a href="${unlink}">Unlink<span class="visually-hidden"> ${identity.displayName} (${identity.email ?? "no email address"})</span></a></p>
</li>`;
}

function identitiesBody(identities: IdentityView[], connections: ConnectionView[]): Html {
  const list =
    identities.length === 0
      ? html`<p>No account at another provider is linked to this one yet.</p>`
      : html`<ul class="sessions">${identities.map(identityItem)}</ul>`;
  const links =
    connections.length === 0
      ? html`<p>This site has no other providers to sign in with.</p>`
      : html`<ul class="federated">${connections.map(
          (c) => html`<li><a class="button" href="${pagePaths.accountIdentityLink}?connection=${encodeURIComponent(c.id)}">Link ${c.displayName}</a></li>`,
        )}</ul>`;
  return html`<p>Accounts at other providers that sign you in here.</p>
${list}
<h2>Link another account</h2>
${links}
<p><a href="${pagePaths.account}">Back to your account</a></p>`;
}

function linkBody(me: MeView, connection: ConnectionView, errors: FormError[]): Html {
  return html`<p>Confirm it's you. Then you sign in at ${connection.displayName}, and come back here with the account linked.</p>
${form({
  operation: OPERATIONS.link,
  action: pagePaths.accountIdentityLink,
  submit: `Continue to ${connection.displayName}`,
  content: html`${hidden("connection", connection.id)}${reauthFields(me, errors)}`,
})}
${BACK}`;
}

/**
 * After the form: a page that goes on to the provider (the Refresh header, and a link), not a 303. The
 * pages' CSP has `form-action 'self'`, which Chrome and Safari apply to a form's redirects too
 * (w3c/webappsec-csp#8), and the provider is another origin; a refresh is a new navigation.
 */
function continueBody(connection: ConnectionView, url: string): Html {
  return html`<p>Sign in at ${connection.displayName} to link it to this account.</p>
<p><a class="button" href="${url}">Continue to ${connection.displayName}</a></p>`;
}

function unlinkBody(me: MeView, identity: IdentityView, errors: FormError[]): Html {
  return html`<p>Your ${identity.displayName} account ${identity.email ? html`<strong>${identity.email}</strong> ` : ""}will no longer sign you in here.</p>
${form({
  operation: OPERATIONS.unlink,
  action: pagePaths.accountIdentityUnlink,
  submit: `Unlink ${identity.displayName}`,
  submitClass: "danger",
  content: html`${hidden("id", identity.id)}${reauthFields(me, errors)}`,
})}
${BACK}`;
}

export async function identityPages(app: FastifyInstance, { deps }: PageDeps): Promise<void> {
  const show = (request: FastifyRequest, title: string, body: Html, errors: FormError[] = [], notice?: string) =>
    page(deps, request, { title, body, errors, notice, signedIn: true });
  const gone = (request: FastifyRequest, reply: FastifyReply, message: string) => sendPage(reply, 404, show(request, TITLE, BACK, [{ message }]));
  const connectionOf = async (request: FastifyRequest, id: unknown) =>
    (await listConnections(deps, request.tenant)).find((c) => typeof id === "string" && c.id === id);
  const identityOf = async (request: FastifyRequest, session: ActiveSession, id: unknown) =>
    (await listIdentities(deps, request.tenant, session)).find((i) => typeof id === "string" && i.id === id);
  const NO_CONNECTION = "This site has no such provider.";
  const NO_IDENTITY = "That account is not linked (any more).";

  app.get(pagePaths.accountIdentities, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) => {
      const [identities, connections] = await Promise.all([listIdentities(deps, request.tenant, session), listConnections(deps, request.tenant)]);
      return sendPage(reply, 200, show(request, TITLE, identitiesBody(identities, connections), [], noticeOf(request)));
    }),
  );

  app.get(pagePaths.accountIdentityLink, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) => {
      const connection = await connectionOf(request, (request.query as { connection?: unknown }).connection);
      if (!connection) return gone(request, reply, NO_CONNECTION);
      const me = await getMe(deps, request.tenant, session);
      return sendPage(reply, 200, show(request, `Link ${connection.displayName}`, linkBody(me, connection, [])));
    }),
  );
  app.post(pagePaths.accountIdentityLink, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) => {
      const values = formValues(request);
      const connection = await connectionOf(request, values.connection);
      if (!connection) return gone(request, reply, NO_CONNECTION);
      const me = await getMe(deps, request.tenant, session);
      const render = (errors: FormError[]) => show(request, `Link ${connection.displayName}`, linkBody(me, connection, errors), errors);
      return handleForm(reply, OPERATIONS.link, REAUTH_FIELDS, render, async () => {
        const input = { ...readReauth(values, me), connectionId: connection.id, returnTo: null };
        const started = await startIdentityLink(deps, request.tenant, session, input, contextOf(request));
        void setFlowCookie(reply, started.flowCookie).header("refresh", `0; url=${started.authorizationUrl}`);
        return sendPage(reply, 200, show(request, `Continue to ${connection.displayName}`, continueBody(connection, started.authorizationUrl)));
      });
    }),
  );

  app.get(pagePaths.accountIdentityUnlink, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) => {
      const identity = await identityOf(request, session, (request.query as { id?: unknown }).id);
      if (!identity) return gone(request, reply, NO_IDENTITY);
      const me = await getMe(deps, request.tenant, session);
      return sendPage(reply, 200, show(request, `Unlink ${identity.displayName}`, unlinkBody(me, identity, [])));
    }),
  );
  app.post(pagePaths.accountIdentityUnlink, hide, async (request, reply) =>
    withSession(deps, request, reply, async (session) => {
      const values = formValues(request);
      const identity = await identityOf(request, session, values.id);
      if (!identity) return gone(request, reply, NO_IDENTITY);
      const me = await getMe(deps, request.tenant, session);
      const render = (errors: FormError[]) => show(request, `Unlink ${identity.displayName}`, unlinkBody(me, identity, errors), errors);
      return handleForm(reply, OPERATIONS.unlink, REAUTH_FIELDS, render, async () => {
        await unlinkIdentity(deps, request.tenant, session, identity.id, readReauth(values, me), contextOf(request));
        return reply.redirect(withNotice(pagePaths.accountIdentities, "identity-unlinked"), 303);
      });
    }),
  );
}
