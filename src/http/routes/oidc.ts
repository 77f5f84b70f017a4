/**
 * contract.md#d28: the tenant's OpenID Provider endpoints. The tenant comes from the Host as for
 * every route (http/tenant.ts); only these paths reach the library, each handed the raw request
 * (no body parsing: the library reads its own forms) with the tenant, its Latch session, and
 * X-Forwarded-Proto/Host set from the tenant (never the client's), so the library writes
 * `https://{domain}/…` behind the TLS-terminating proxy (decisions.md#openid-provider).
 * The JWKS is Latch's own answer from the store, so a rotation is published at once on every instance.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Deps } from "../../deps.js";
import { findActiveSession, logout } from "../../flows/kernel/sessions.js";
import { DISCOVERY_PATH, issuerOf, OIDC_ROUTES, oidcProviders, type LatchIncomingMessage } from "../../flows/oidc/provider.js";
import { publicJwks } from "../../flows/oidc/signing-keys.js";
import { oidcPageHooks } from "../../ui/pages/consent-page.js";
import { clearedSessionCookieLine } from "../session-cookie.js";
import { registerTenantResolution, SESSION_COOKIE } from "../tenant.js";

const hide = { schema: { hide: true } };

/**
 * The library's paths, with the methods it answers on them. OPTIONS where a browser app (a public client) calls
 * with a header that needs a CORS preflight (`Authorization: Bearer` at userinfo): the library answers it, and its
 * `clientBasedCORS` then decides the actual request by the client's redirect URIs' origins.
 */
const PROVIDER_PATHS: [string, ("GET" | "POST" | "OPTIONS")[]][] = [
  [DISCOVERY_PATH, ["GET"]],
  [OIDC_ROUTES.authorization, ["GET", "POST"]],
  [`${OIDC_ROUTES.authorization}/:uid`, ["GET"]],
  [OIDC_ROUTES.token, ["POST", "OPTIONS"]],
  [OIDC_ROUTES.userinfo, ["GET", "POST", "OPTIONS"]],
  [OIDC_ROUTES.revocation, ["POST", "OPTIONS"]],
  [OIDC_ROUTES.introspection, ["POST"]],
  [OIDC_ROUTES.end_session, ["GET", "POST"]],
  [`${OIDC_ROUTES.end_session}/confirm`, ["POST"]],
  [`${OIDC_ROUTES.end_session}/success`, ["GET"]],
];

/**
 * decisions.md#openid-provider: a request for offline_access is honoured as if it said prompt=consent.
 * Every authorization passes through Latch's interaction anyway (the consent page for a third-party
 * client, the first-party client's standing consent), and the library drops offline_access otherwise.
 */
function withOfflineConsent(url: string): string {
  const query = url.indexOf("?");
  if (query < 0) return url;
  const params = new URLSearchParams(url.slice(query + 1));
  const scope = params.get("scope");
  if (!scope?.split(" ").includes("offline_access")) return url;
  const prompt = params.get("prompt");
  if (prompt !== null && prompt.split(" ").some((p) => p === "none" || p === "consent")) return url;
  params.set("prompt", prompt ? `${prompt} consent` : "consent");
  return `${url.slice(0, query)}?${params.toString()}`;
}

/** The largest POSTed authorization request read (a GET's URL has a like bound at the HTTP parser). */
const MAX_POSTED_AUTHORIZATION_BYTES = 64 * 1024;

/**
 * decisions.md#openid-provider: a POSTed authorization request (OpenID Connect Core 3.1.2.1) is
 * handed to the library as the same request by GET, so withOfflineConsent applies to it as well. Only
 * a form-encoded body of a bounded size; anything else goes to the library untouched, to be refused there.
 */
async function postedAuthorizationAsGet(request: FastifyRequest, raw: LatchIncomingMessage): Promise<boolean> {
  const type = request.headers["content-type"]?.split(";")[0]?.trim().toLowerCase();
  const length = Number(request.headers["content-length"] ?? NaN);
  if (type !== "application/x-www-form-urlencoded" || !(length >= 0 && length <= MAX_POSTED_AUTHORIZATION_BYTES)) return false;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of raw) {
    size += (chunk as Buffer).length;
    if (size > MAX_POSTED_AUTHORIZATION_BYTES) return false;
    chunks.push(chunk as Buffer);
  }
  raw.method = "GET";
  raw.url = `${OIDC_ROUTES.authorization}?${Buffer.concat(chunks).toString("latin1")}`;
  delete raw.headers["content-type"];
  delete raw.headers["content-length"];
  delete raw.headers["transfer-encoding"];
  return true;
}

export async function oidcRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const providers = oidcProviders(deps, oidcPageHooks);

  const mount = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const tenant = request.tenant;
    const entry = await providers.forTenant(tenant);
    const cookie = request.cookies[SESSION_COOKIE];
    const session = await findActiveSession(deps, tenant, cookie);
    const raw = request.raw as LatchIncomingMessage;
    raw.latch = {
      tenant,
      session,
      findLatchSession: () => findActiveSession(deps, tenant, cookie),
      endLatchSession: async () => {
        await logout(deps, tenant, cookie);
        // The reply is hijacked: the line goes onto the raw answer, beside the library's own cookies.
        reply.raw.appendHeader("set-cookie", clearedSessionCookieLine(app));
      },
    };
    const issuer = new URL(issuerOf(deps, tenant));
    raw.headers["x-forwarded-proto"] = issuer.protocol.slice(0, -1);
    raw.headers["x-forwarded-host"] = issuer.host;
    raw.headers["x-forwarded-for"] = request.ip;
    const posted = request.method === "POST" && request.url === OIDC_ROUTES.authorization && (await postedAuthorizationAsGet(request, raw));
    if (raw.url?.startsWith(`${OIDC_ROUTES.authorization}?`) && (request.method === "GET" || posted)) raw.url = withOfflineConsent(raw.url);
    reply.raw.setHeader("x-request-id", request.id);
    // The reply is hijacked, so sendPage's headers never reach the library's own pages (the logout confirmation, its
    // error page): no site may frame them (clickjacking of "Sign out", docs/security.md). Only frame-ancestors: the
    // pages' form-action 'self' would stop the logout's redirect to the client (Chrome applies it to the chain).
    reply.raw.setHeader("x-frame-options", "DENY");
    reply.raw.setHeader("content-security-policy", "frame-ancestors 'none'");
    reply.hijack();
    entry.handle(raw, reply.raw);
  };

  await app.register(async (scope) => {
    registerTenantResolution(scope, deps, { cors: false });
    // The library parses its own bodies (form-encoded and JSON for some endpoints).
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", (_request, _payload, done) => done(null));
    for (const [url, methods] of PROVIDER_PATHS) scope.route({ method: methods, url, ...hide, handler: mount });
    // Not cached (no-store, as every answer): a rotation's new key must be seen at once.
    scope.get(OIDC_ROUTES.jwks, hide, async (request, reply) => reply.type("application/jwk-set+json").send(await publicJwks(deps, request.tenant)));
  });
}
