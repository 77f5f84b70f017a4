/**
 * Federated sign-in over HTTP (decisions.md#federated-sign-in): the start redirect, the provider's
 * callback, the step a callback may leave (second factor, proof before a link), and the member's own
 * identities. The callback never answers 5xx or an error body: the browser lands on a hosted page
 * with a contract.md#d4 code and a reason, and no token or code is ever put in a URL Latch makes.
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply } from "fastify";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { listConnections } from "../../flows/federation/connections.js";
import { listIdentities, startIdentityLink, unlinkIdentity } from "../../flows/federation/identities.js";
import { confirmFederatedLink, finishFederatedSecondFactor } from "../../flows/federation/pending.js";
import { finishFederation, startFederation, type FederatedOutcome } from "../../flows/federation/sign-in.js";
import { UpstreamError } from "../../providers/upstream.js";
import { FEDERATION_FLOW_LIFETIME_MS, FEDERATION_PENDING_LIFETIME_MS, rateRules, describeDuration, describeWindow } from "../../rules.js";
import { pagePaths, safeRedirectPath } from "../../ui/paths.js";
import { BODY_ERRORS, errorResponses, security, SetSessionCookieHeader, TENANT_ERRORS } from "../openapi.js";
import { described, MessageBody, NoBodyNeeded, PublicIdField, SecondFactorCodeField, Timestamp } from "../schemas.js";
import { requireSession, setSessionCookie } from "../session-cookie.js";
import { contextOf, SESSION_COOKIE } from "../tenant.js";
import { REAUTH_ERRORS, Reauthentication } from "./self-service.js";

/** The start's cookie: state, nonce and PKCE verifier derive from it (security/flow-checks.ts). */
export const FLOW_COOKIE = { name: "latch_fed", path: "/auth/federated" } as const;
/**
 * What waits after a callback (second factor, proof before a link): read by the pages and the API alike.
 * `__Host-`: the browser takes it only from this host, Secure, Path=/, so no sibling subdomain can
 * plant an attacker's step in a member's browser (decisions.md#federated-sign-in).
 */
export const PENDING_COOKIE = { name: "__Host-latch_fed_pending", path: "/" } as const;
export const FEDERATION_COOKIE_FLAGS = { httpOnly: true, secure: true, sameSite: "lax" } as const;
const cookieFlags = FEDERATION_COOKIE_FLAGS;

export const ConnectionParam = Type.String({ pattern: "^[a-z0-9-]{1,32}$", description: "The connection's id." });
const ReturnTo = Type.String({
  maxLength: 2048,
  pattern: "^/(?![/\\\\])[\\x21-\\x5b\\x5d-\\x7e]*$",
  description: "A path on the tenant's site to land on afterwards (`/…`, never another host); default the tenant's `loginSuccessRedirect`.",
});
export const RedirectAnswer = (description: string, cookie?: string) =>
  Type.Unsafe<undefined>({
    description,
    headers: {
      Location: { type: "string", description: "Where the browser goes next." },
      ...(cookie ? { "Set-Cookie": { type: "string", description: cookie } } : {}),
    },
  });
export const ConnectionListBody = described(
  Type.Object({
    success: Type.Literal(true),
    connections: Type.Array(
      Type.Object({
        id: Type.String(),
        displayName: Type.String(),
        startUrl: Type.String({ description: "`/auth/federated/{id}/start`: a link or button goes there." }),
      }),
    ),
  }),
  "The tenant's connections, for sign-in buttons.",
);
export const IdentityListBody = described(
  Type.Object({
    success: Type.Literal(true),
    identities: Type.Array(
      Type.Object({
        id: PublicIdField,
        connection: Type.String(),
        displayName: Type.String(),
        email: Type.Union([Type.String(), Type.Null()], { description: "What the provider said the email was when last used; never used to match." }),
        createdAt: Timestamp,
        lastUsedAt: Type.Union([Timestamp, Type.Null()]),
      }),
    ),
  }),
  "The member's linked identities.",
);
export const FederatedLoginAnswer = described(
  Type.Object({ success: Type.Literal(true), recordid: Type.String(), redirect: Type.String() }),
  "Signed in: the session cookie is set; `redirect` is where the sign-in started for (`returnTo`, else `loginSuccessRedirect`).",
  SetSessionCookieHeader,
);
export const LinkStartAnswer = described(
  Type.Object({ success: Type.Literal(true), redirect: Type.String({ description: "The provider's authorization URL: send the browser there." }) }),
  `The \`latch_fed\` cookie is set (${describeDuration(FEDERATION_FLOW_LIFETIME_MS)}); the browser goes to \`redirect\`.`,
  {
    "Set-Cookie": Type.String({
      pattern: "^latch_fed=[^;]+;",
      description: "`latch_fed=<random>; Max-Age=600; Path=/auth/federated; HttpOnly; Secure; SameSite=Lax`",
    }),
  },
);
export const LinkConfirmAnswer = described(
  Type.Object({ success: Type.Literal(true), message: Type.String(), redirect: Type.String() }),
  "Linked; the member is sent a `security_alert` `identity_linked`.",
  { "Set-Cookie": Type.String({ pattern: "^__Host-latch_fed_pending=;", description: "Clears `__Host-latch_fed_pending`: the step is used." }) },
);

/** Sets `latch_fed` for a flow just started (the start route, a link from the API or the pages). */
export function setFlowCookie(reply: FastifyReply, flowCookie: string): FastifyReply {
  return reply.setCookie(FLOW_COOKIE.name, flowCookie, { ...cookieFlags, path: FLOW_COOKIE.path, maxAge: FEDERATION_FLOW_LIFETIME_MS / 1000 });
}

/** Where a callback's outcome sends the browser (never a token in the URL: cookies carry them). */
function answerCallback(reply: FastifyReply, fallback: string, outcome: FederatedOutcome): FastifyReply {
  // The callback URL holds the code and state: the next page must not get it as a Referer.
  void reply.header("referrer-policy", "no-referrer");
  void reply.clearCookie(FLOW_COOKIE.name, { ...cookieFlags, path: FLOW_COOKIE.path });
  const back = (returnTo: string | null | undefined) => safeRedirectPath(returnTo ?? undefined, fallback);
  switch (outcome.kind) {
    case "signed_in":
      setSessionCookie(reply, outcome.session);
      return reply.redirect(back(outcome.returnTo), 302);
    case "linked":
      return reply.redirect(`${pagePaths.accountIdentities}?notice=identity-linked`, 302);
    case "second_factor":
    case "link_required": {
      void reply.setCookie(PENDING_COOKIE.name, outcome.pendingCookie, {
        ...cookieFlags,
        path: PENDING_COOKIE.path,
        maxAge: FEDERATION_PENDING_LIFETIME_MS / 1000,
      });
      return reply.redirect(outcome.kind === "second_factor" ? pagePaths.federatedSecondFactor : pagePaths.federatedLink, 302);
    }
    case "failed":
      return reply.redirect(`${pagePaths.federatedError}?code=federation_failed&reason=${outcome.reason}`, 302);
  }
}

export const federationRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  const fallbackOf = (tenantRedirect: string | undefined) => safeRedirectPath(tenantRedirect, pagePaths.account);

  app.get(
    "/auth/federated/connections",
    {
      schema: {
        summary: "List the sign-in connections",
        description: 'The tenant\'s identity providers, by id and display name, for "Continue with …" buttons. Never a client id or secret.',
        tags: ["federation"],
        operationId: "listSignInConnections",
        response: { 200: ConnectionListBody, ...errorResponses(...TENANT_ERRORS) },
      },
    },
    async (request) => ({
      success: true as const,
      connections: (await listConnections(deps, request.tenant)).map((c) => ({
        id: c.id,
        displayName: c.displayName,
        startUrl: `/auth/federated/${c.id}/start`,
      })),
    }),
  );

  app.get(
    "/auth/federated/:connection/start",
    {
      schema: {
        summary: "Start a sign-in with an identity provider",
        description: `A browser navigation: answers 302 to the provider with \`state\`, \`nonce\` and PKCE S256, bound to the one-use \`latch_fed\` cookie (HttpOnly, Secure, SameSite=Lax, Path=/auth/federated, ${describeDuration(FEDERATION_FLOW_LIFETIME_MS)}). No bot check; ${rateRules.federatedStartPerIp.limit} starts per IP per ${describeWindow(rateRules.federatedStartPerIp.windowMs)}. A provider that cannot be reached sends the browser to \`/ui/federated-error\`.`,
        tags: ["federation"],
        operationId: "startFederatedSignIn",
        params: Type.Object({ connection: ConnectionParam }),
        querystring: Type.Object({ returnTo: Type.Optional(ReturnTo) }),
        response: {
          302: RedirectAnswer(
            "To the provider's authorization endpoint, or to `/ui/federated-error`.",
            "`latch_fed=<random>; Max-Age=600; Path=/auth/federated; HttpOnly; Secure; SameSite=Lax`",
          ),
          ...errorResponses(...TENANT_ERRORS, "not_found", "validation_failed", "rate_limited"),
        },
      },
    },
    async (request, reply) => {
      const input = {
        connectionId: request.params.connection,
        returnTo: request.query.returnTo ?? null,
        purpose: "login" as const,
        memberId: 0,
        sessionHash: null,
      };
      try {
        const started = await startFederation(deps, request.tenant, input, contextOf(request));
        setFlowCookie(reply, started.flowCookie);
        return reply.redirect(started.authorizationUrl, 302);
      } catch (error) {
        if (!(error instanceof UpstreamError)) throw error;
        return reply.redirect(`${pagePaths.federatedError}?code=federation_failed&reason=${error.reason}`, 302);
      }
    },
  );

  app.get(
    "/auth/federated/:connection/callback",
    {
      schema: {
        summary: "The provider's callback",
        description:
          "Where the provider sends the browser back (register this URL at the provider: the connection's `redirectUri`). Checks `state` against the `latch_fed` cookie, which it uses up; openid-client exchanges the code (with the PKCE verifier) and checks the ID token (signature by the issuer's JWKS, `iss`, `aud`, `nonce`, `exp`). Always a 302: signed in (to `returnTo`), to `/ui/federated-second-factor` or `/ui/federated-link` with the `__Host-latch_fed_pending` cookie, or to `/ui/federated-error?code=federation_failed&reason=…`.",
        tags: ["federation"],
        operationId: "federatedCallback",
        params: Type.Object({ connection: ConnectionParam }),
        querystring: Type.Object(
          {
            code: Type.Optional(Type.String({ maxLength: 4096 })),
            state: Type.Optional(Type.String({ maxLength: 4096 })),
            iss: Type.Optional(Type.String({ maxLength: 4096 })),
            error: Type.Optional(Type.String({ maxLength: 4096 })),
            error_description: Type.Optional(Type.String({ maxLength: 4096 })),
          },
          { additionalProperties: Type.String({ maxLength: 4096 }), description: "What the provider sends back (RFC 6749 4.1.2, RFC 9207 `iss`)." },
        ),
        response: {
          302: RedirectAnswer("See the description.", "The session cookie, or `__Host-latch_fed_pending`; `latch_fed` is cleared."),
          ...errorResponses(...TENANT_ERRORS),
        },
      },
    },
    async (request, reply) => {
      const callbackUrl = new URL(request.url, "https://callback.invalid");
      const flowCookie = request.cookies[FLOW_COOKIE.name];
      const sessionCookie = request.cookies[SESSION_COOKIE];
      const outcome = await finishFederation(
        deps,
        request.tenant,
        { connectionId: request.params.connection, callbackUrl, flowCookie, sessionCookie },
        contextOf(request),
      );
      return answerCallback(reply, fallbackOf(request.tenant.settings.loginSuccessRedirect), outcome);
    },
  );

  app.post(
    "/auth/federated/second-factor",
    {
      schema: {
        summary: "Finish a federated sign-in with the second factor",
        description: `For a member with 2FA after the callback: the \`__Host-latch_fed_pending\` cookie (${describeDuration(FEDERATION_PENDING_LIFETIME_MS)}) and a TOTP or recovery code, checked and counted as the second step of \`POST /auth/login\`. A wrong code leaves the step for another try. ${rateRules.federatedSecondFactorPerIp.limit} tries per IP per ${describeWindow(rateRules.federatedSecondFactorPerIp.windowMs)}.`,
        tags: ["federation"],
        operationId: "finishFederatedSecondFactor",
        body: Type.Object({ twoFACode: SecondFactorCodeField }),
        response: {
          200: FederatedLoginAnswer,
          ...errorResponses(...TENANT_ERRORS, ...BODY_ERRORS, "federation_failed", "invalid_2fa_code", "account_locked", "rate_limited"),
        },
      },
    },
    async (request, reply) => {
      const input = { pendingCookie: request.cookies[PENDING_COOKIE.name], twoFACode: request.body.twoFACode };
      const done = await finishFederatedSecondFactor(deps, request.tenant, input, contextOf(request));
      void reply.clearCookie(PENDING_COOKIE.name, { ...cookieFlags, path: PENDING_COOKIE.path });
      setSessionCookie(reply, done.session);
      return {
        success: true as const,
        recordid: String(done.recordId),
        redirect: safeRedirectPath(done.returnTo ?? undefined, fallbackOf(request.tenant.settings.loginSuccessRedirect)),
      };
    },
  );

  app.post(
    "/auth/federated/link",
    {
      schema: {
        summary: "Link the identity that met this account's email",
        description:
          "After a callback found an existing member with the provider's email, that member signs in (any way) in the same browser, then calls this with the `__Host-latch_fed_pending` cookie. The session must be younger than the callback. Links `(connection, subject)` to the member and sends a `security_alert` `identity_linked`; \"this wasn't me\" removes it.",
        tags: ["federation"],
        operationId: "confirmFederatedLink",
        security: security.session,
        body: NoBodyNeeded,
        response: { 200: LinkConfirmAnswer, ...errorResponses(...TENANT_ERRORS, ...BODY_ERRORS, "unauthorized", "federation_failed") },
      },
    },
    async (request, reply) => {
      const session = await requireSession(deps, request);
      const linked = await confirmFederatedLink(deps, request.tenant, session, { pendingCookie: request.cookies[PENDING_COOKIE.name] }, contextOf(request));
      void reply.clearCookie(PENDING_COOKIE.name, { ...cookieFlags, path: PENDING_COOKIE.path });
      const redirect = safeRedirectPath(linked.returnTo ?? undefined, fallbackOf(request.tenant.settings.loginSuccessRedirect));
      return { success: true as const, message: `Your ${linked.connection} account is now linked.`, redirect };
    },
  );

  app.get(
    "/auth/identities",
    {
      schema: {
        summary: "List the member's linked identities",
        description: "Each identity at a provider the member can sign in with.",
        tags: ["federation"],
        operationId: "listIdentities",
        security: security.session,
        response: { 200: IdentityListBody, ...errorResponses(...TENANT_ERRORS, "unauthorized") },
      },
    },
    async (request) => ({ success: true as const, identities: await listIdentities(deps, request.tenant, await requireSession(deps, request)) }),
  );

  app.post(
    "/auth/identities/link/:connection",
    {
      schema: {
        summary: "Link another identity",
        description:
          "Re-authenticates as `POST /auth/change-email` does, then starts the provider's sign-in for a link: the answer sets `latch_fed` and names the URL to send the browser to. The callback links the identity (or refuses one that is someone else's) and lands on `/ui/account/identities`.",
        tags: ["federation"],
        operationId: "startIdentityLink",
        security: security.session,
        params: Type.Object({ connection: ConnectionParam }),
        body: Type.Object({ ...Reauthentication, returnTo: Type.Optional(ReturnTo) }),
        response: {
          200: LinkStartAnswer,
          ...errorResponses(...TENANT_ERRORS, ...BODY_ERRORS, "unauthorized", "not_found", ...REAUTH_ERRORS, "federation_failed"),
        },
      },
    },
    async (request, reply) => {
      const session = await requireSession(deps, request);
      const input = { ...request.body, connectionId: request.params.connection, returnTo: request.body.returnTo ?? null };
      const started = await startIdentityLink(deps, request.tenant, session, input, contextOf(request));
      setFlowCookie(reply, started.flowCookie);
      return { success: true as const, redirect: started.authorizationUrl };
    },
  );

  app.delete(
    "/auth/identities/:id",
    {
      schema: {
        summary: "Unlink an identity",
        description:
          'Re-authenticates as `POST /auth/change-email` does; sends a `security_alert` `identity_unlinked` and `member.updated` (`changes: ["identities"]`).',
        tags: ["federation"],
        operationId: "unlinkIdentity",
        security: security.session,
        params: Type.Object({ id: PublicIdField }),
        body: Type.Union([Type.Object(Reauthentication), Type.Null()], {
          description: "The re-authentication; no body only for a member without a password or 2FA and a young session.",
        }),
        response: {
          200: described(MessageBody, "Unlinked."),
          ...errorResponses(...TENANT_ERRORS, ...BODY_ERRORS, "unauthorized", "not_found", ...REAUTH_ERRORS),
        },
      },
    },
    async (request) => {
      const session = await requireSession(deps, request);
      await unlinkIdentity(deps, request.tenant, session, request.params.id, request.body ?? {}, contextOf(request));
      return { success: true as const, message: "The identity was unlinked." };
    },
  );
};
