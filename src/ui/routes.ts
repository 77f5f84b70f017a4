/**
 * The hosted pages (contract.md#issue-7): small server-rendered HTML under /ui/ plus the contract.md#spec-4-6 link pages at
 * their root paths. Every form posts to the page's own route, whose handler calls the same flow as
 * the JSON route (bot check, limits and lockouts live in the flows), then redirects (303) or
 * renders the form again with the error. That path needs no JavaScript; src/ui/browser/hosted.ts
 * only enhances it. The routes are hidden from the OpenAPI document: they are pages, not the API.
 */
import type { FastifyError, FastifyInstance, FastifyRequest } from "fastify";
import type { Deps } from "../deps.js";
import { AuthError } from "../errors.js";
import { isOriginAllowed, registerTenantResolution, tenantDomainOf } from "../http/tenant.js";
import { describeDatabase } from "../store/database.js";
import { hostedAssetRoutes } from "./assets.js";
import { renderErrorPage, sendPage } from "./layout.js";
import { pagePaths } from "./paths.js";
import { accountPages } from "./pages/account-pages.js";
import { markSignedIn } from "./pages/common.js";
import { checkEmailPages } from "./pages/check-email-page.js";
import { consentPages } from "./pages/consent-page.js";
import { federationPages } from "./pages/federation-pages.js";
import { identityPages } from "./pages/identities-page.js";
import { loginPages } from "./pages/login-pages.js";
import { passwordPages } from "./pages/password-pages.js";
import { registrationPages } from "./pages/registration-pages.js";
import { passkeyPages } from "./pages/passkey-pages.js";
import { selfServicePages } from "./pages/self-service-pages.js";

const PAGE_TITLES: Record<number, string> = {
  400: "Bad request",
  403: "Request refused",
  404: "Site not found",
  413: "Request too large",
  415: "Unsupported request",
  429: "Too many requests",
};

/**
 * Login CSRF: a form post from another site must not log the browser in, even without a session
 * cookie (the shared check in http/tenant.ts covers requests that carry one). The pages send
 * Referrer-Policy same-origin, so the browser's own posts carry the real Origin, never "null".
 */
function refuseForeignFormPost(request: FastifyRequest): void {
  const origin = request.headers.origin;
  if (request.method !== "POST" || origin === undefined) return;
  if (!isOriginAllowed(request.tenant, origin)) throw new AuthError("origin_mismatch");
}

function parseFormBody(_request: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void): void {
  // Plain URLSearchParams: a repeated name keeps its last value; forms.ts reads strings only.
  done(null, Object.fromEntries(new URLSearchParams(body.toString())));
}

/**
 * Dev mode only (a loopback server of one developer): "This site is not known" alone leaves a
 * newcomer guessing. Say which hostname was asked for, in which database, and how to add it.
 */
function unknownSiteHint(deps: Deps, request: FastifyRequest): string {
  const domain = tenantDomainOf(request);
  return (
    ` Dev mode: no tenant has the hostname "${domain}" in ${describeDatabase(deps.config.databaseUrl)}.` +
    ` Open the pages on localhost (the dev tenant), or create this one:` +
    ` DATABASE_URL=${deps.config.databaseUrl} npm run latch -- tenant create --domain ${domain} --settings '{…}'`
  );
}

function renderFailure(deps: Deps) {
  return (error: FastifyError, request: FastifyRequest, reply: Parameters<typeof sendPage>[0]) => {
    const status =
      error instanceof AuthError ? error.status : error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
    if (status >= 500) request.log.error({ err: error }, "hosted page failed");
    else request.log.info({ code: error instanceof AuthError ? error.code : error.code }, "hosted page refused a request");
    let message =
      error instanceof AuthError && status < 500
        ? error.message
        : status === 413
          ? "The form is too large."
          : status < 500
            ? "The request could not be understood."
            : "Something went wrong. Please try again.";
    if (deps.dev && error instanceof AuthError && error.code === "unknown_tenant") message += unknownSiteHint(deps, request);
    return sendPage(reply, status, renderErrorPage(PAGE_TITLES[status] ?? "Something went wrong", message, request.id));
  };
}

export async function hostedPageRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  // Assets need no tenant: the same files for every site.
  await app.register(hostedAssetRoutes, { deps });
  // A mistyped page address is a person's, not a program's: an HTML page, not the API's JSON 404.
  await app.register(
    async (scope) => {
      // /ui/ sends a member to their account, anyone else to the login page.
      const next = { href: pagePaths.home, text: "Go to the sign-in pages" };
      scope.setNotFoundHandler((request, reply) =>
        sendPage(reply, 404, renderErrorPage("Page not found", "There is no page at this address.", request.id, next)),
      );
    },
    { prefix: "/ui" },
  );
  await app.register(async (scope) => {
    scope.setErrorHandler(renderFailure(deps));
    registerTenantResolution(scope, deps, { cors: false });
    scope.addHook("onRequest", async (request) => refuseForeignFormPost(request));
    scope.addHook("preHandler", async (request) => markSignedIn(deps, request));
    // A redirect after a form post may leave a link page whose address holds the token: the next
    // page (perhaps the tenant's own app, with analytics) must not get that address as Referer.
    scope.addHook("onSend", async (_request, reply, payload) => {
      if (reply.statusCode === 303) void reply.header("referrer-policy", "no-referrer");
      return payload;
    });
    // Only in this scope; the body limit is the app's (rules.ts BODY_LIMIT_BYTES), like JSON's.
    scope.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string" }, parseFormBody);
    await scope.register(registrationPages, { deps });
    await scope.register(checkEmailPages, { deps });
    await scope.register(loginPages, { deps });
    await scope.register(passwordPages, { deps });
    await scope.register(accountPages, { deps });
    await scope.register(selfServicePages, { deps });
    await scope.register(passkeyPages, { deps });
    await scope.register(federationPages, { deps });
    await scope.register(identityPages, { deps });
    await scope.register(consentPages, { deps });
  });
}
