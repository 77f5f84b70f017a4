/**
 * buildApp(deps): the Fastify instance with its plugins and routes. No I/O at import time; the
 * caller owns listening, the dispatcher and shutdown, so tests drive it through app.inject.
 */
import cookie from "@fastify/cookie";
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyPluginAsync, type RouteOptions } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { Deps } from "./deps.js";
import { answerConnectRequests, clientErrorHandler, handleFrameworkError, registerErrorHandling, sendError } from "./http/errors.js";
import { AJV_OPTIONS, buildRequestValidators } from "./http/validation.js";
import { AuthError } from "./errors.js";
import { registerObservability } from "./http/observability.js";
import { adminRoutes } from "./http/routes/admin.js";
import { memberAdminRoutes } from "./http/routes/members.js";
import { memberImportRoutes } from "./http/routes/import.js";
import { connectionAdminRoutes } from "./http/routes/connections.js";
import { oauthClientAdminRoutes } from "./http/routes/oauth-clients.js";
import { botChallengeRoutes } from "./http/routes/bot-challenge.js";
import { healthRoutes } from "./http/routes/health.js";
import { loginRoutes } from "./http/routes/login.js";
import { registerOpenApi } from "./http/openapi.js";
import { magicLinkRoutes } from "./http/routes/magic-link.js";
import { twoFactorRoutes } from "./http/routes/two-factor.js";
import { operatorRoutes } from "./http/routes/operator.js";
import { passwordRoutes } from "./http/routes/password.js";
import { registrationRoutes } from "./http/routes/registration.js";
import { passkeyRoutes } from "./http/routes/passkeys.js";
import { federationRoutes } from "./http/routes/federation.js";
import { federationFormPostRoutes } from "./http/routes/federation-form-post.js";
import { oidcRoutes } from "./http/routes/oidc.js";
import { selfServiceRoutes } from "./http/routes/self-service.js";
import { sessionTokenRoutes } from "./http/routes/session-token.js";
import { registerCorsPreflight } from "./http/cors.js";
import { registerTenantResolution } from "./http/tenant.js";
import { hostedPageRoutes } from "./ui/routes.js";
import { BODY_LIMIT_BYTES, MAX_BODY_DEPTH, MAX_PATH_PARAM_LENGTH, MAX_URL_LENGTH } from "./rules.js";

export interface BuildAppOptions {
  /** Called for every route as it is registered; test/openapi.test.ts checks them against the document. */
  onRoute?: (route: RouteOptions) => void;
  /** Routes an entry adds, each given { deps }: dev mode's inbox (src/dev/main.ts, the test harness in dev mode). */
  plugins?: FastifyPluginAsync<{ deps: Deps }>[];
}

function nulRefused(): AuthError {
  return new AuthError("validation_failed", { message: "The request holds a NUL character.", logFields: { rule: "nul_character" } });
}

function tooDeepRefused(): AuthError {
  return new AuthError("validation_failed", {
    message: "The request body nests deeper than any valid one.",
    details: [{ field: "", rule: "max_depth", message: `must not nest deeper than ${MAX_BODY_DEPTH} levels` }],
    logFields: { rule: "max_body_depth" },
  });
}

/**
 * Why a parsed body (JSON or form) is refused before its schema sees it, if it is: a string or key
 * holding U+0000, or nesting deeper than MAX_BODY_DEPTH (contract.md#d30). A loop over an explicit stack, not
 * recursion: a body nested thousands deep (within 16 KiB) overflowed the call stack into a 500.
 */
function refusalOfBody(body: unknown): AuthError | undefined {
  const pending: { value: unknown; depth: number }[] = [{ value: body, depth: 0 }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { value, depth } = next;
    if (typeof value === "string") {
      if (value.includes("\u0000")) return nulRefused();
    } else if (value !== null && typeof value === "object") {
      if (depth >= MAX_BODY_DEPTH) return tooDeepRefused();
      for (const [key, child] of Object.entries(value)) {
        if (key.includes("\u0000")) return nulRefused();
        pending.push({ value: child, depth: depth + 1 });
      }
    }
  }
  return undefined;
}

export async function buildApp(deps: Deps, options: BuildAppOptions = {}): Promise<FastifyInstance> {
  // Request ids correlate an answer with its log lines; they need to be unique, not secret, so a
  // random per-process prefix and a counter do (random bytes per request showed in the profile).
  const requestIdPrefix = "req_" + deps.random.bytes(6).toString("base64url");
  let requestCount = 0;
  const nextRequestId = (): string => requestIdPrefix + (requestCount++).toString(36);
  // Typed, not asserted: the instance's logger type is inferred from this option.
  const logger: FastifyBaseLogger = deps.log;
  const app = Fastify({
    loggerInstance: logger,
    bodyLimit: BODY_LIMIT_BYTES,
    trustProxy: deps.config.trustProxy === false ? false : deps.config.trustProxy,
    genReqId: nextRequestId,
    // contract.md#d21: a path parameter is refused (414) only beyond the longest value a route's schema allows
    // (a tenant domain); and what the router or Node's parser refuses answers the contract.md#d4 body too.
    routerOptions: { maxParamLength: MAX_PATH_PARAM_LENGTH },
    frameworkErrors: handleFrameworkError,
    clientErrorHandler: clientErrorHandler(logger, nextRequestId),
    // Mistyped fields are errors, not silently coerced ("123" is not 123, 123 is not "123"), and a
    // misspelled setting is refused rather than dropped; only query strings, all text, are coerced.
    ajv: AJV_OPTIONS,
    schemaController: { compilersFactory: { buildValidator: buildRequestValidators() } },
    // Fastify's own 503 while closing has a body of its own, not contract.md#d4's; the onRequest hook below
    // answers it instead (docs/operations.md#signals-and-shutdown).
    return503OnClosing: false,
  }).withTypeProvider<TypeBoxTypeProvider>();
  if (options.onRoute) app.addHook("onRoute", options.onRoute);
  answerConnectRequests(app.server);

  registerErrorHandling(app);
  registerObservability(app, deps);
  // contract.md#d4: a body that is not application/json gets 415, including text/plain.
  app.removeContentTypeParser("text/plain");
  // contract.md#issue-16: `Content-Type: application/json` with no body at all (what many clients send on a
  // bodyless POST such as logout) is no body, not malformed JSON; a route that needs a body still
  // refuses it (400 validation_failed). Anything else is Fastify's own parser, poisoning checks included.
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    if (body === "") return done(null, undefined);
    // Fastify's parser answers through `done`. Its type also allows a parser's promise form, which
    // answers by its promise instead: that answer, or refusal, goes to `done` too, never lost.
    const answer = parseJson(request, body as string, done);
    if (answer) answer.then((value: unknown) => done(null, value), done);
  });
  await app.register(cookie);

  // Set before the server stops listening; requests that still reach a route (on a connection that
  // was busy when close() began) are turned away with 503 `unavailable`, the contract.md#d4 body (contract.md#issue-29).
  let closing = false;
  app.addHook("preClose", (done) => {
    closing = true;
    done();
  });
  // Every answer names its request id, so a person can quote it and an operator find the log line.
  // And none is kept by a cache: answers hold session data, a new tenant's keys, a member's export.
  // A route that may be cached says so itself (the hosted pages' assets).
  app.addHook("onRequest", (request, reply, done) => {
    void reply.header("x-request-id", request.id);
    void reply.header("cache-control", "no-store");
    if (closing) {
      request.log.info({ code: "unavailable", reason: "closing" }, "request refused");
      void sendError(request, reply, new AuthError("unavailable", { message: "The server is shutting down. Please try again." }));
      return; // answered: the route does not run
    }
    // contract.md#d21: no valid URL is this long (the longest route with its longest parameters and query is a
    // few hundred characters), so a longer one is refused before anything reads it.
    if (request.url.length > MAX_URL_LENGTH) {
      done(new AuthError("validation_failed", { status: 414, message: "The URL is longer than any valid one.", logFields: { rule: "max_url_length" } }));
      return;
    }
    // No valid value holds a NUL character, and PostgreSQL refuses one in text: refused here, as bad input.
    if (/%00/.test(request.url)) {
      done(nulRefused());
      return;
    }
    done();
  });
  app.addHook("preValidation", (request, _reply, done) => {
    done(request.body === undefined ? undefined : refusalOfBody(request.body));
  });

  // Before every route: the document is collected from the routes as they are registered.
  await registerOpenApi(app);
  await app.register(healthRoutes, { deps });
  await app.register(operatorRoutes, { deps });
  for (const plugin of options.plugins ?? []) await app.register(plugin, { deps }); // dev mode's inbox (src/dev/main.ts)
  await app.register(async (scope) => {
    registerTenantResolution(scope, deps);
    registerCorsPreflight(scope);
    await scope.register(botChallengeRoutes, { deps });
    await scope.register(registrationRoutes, { deps });
    await scope.register(loginRoutes, { deps });
    await scope.register(passwordRoutes, { deps });
    await scope.register(magicLinkRoutes, { deps });
    await scope.register(twoFactorRoutes, { deps });
    await scope.register(selfServiceRoutes, { deps });
    await scope.register(sessionTokenRoutes, { deps });
    await scope.register(passkeyRoutes, { deps });
    await scope.register(adminRoutes, { deps });
    await scope.register(memberAdminRoutes, { deps });
    await scope.register(memberImportRoutes, { deps });
    await scope.register(connectionAdminRoutes, { deps });
    await scope.register(oauthClientAdminRoutes, { deps });
    await scope.register(federationRoutes, { deps });
    // Its own scope: the one route that takes a form body (decisions.md#sign-in-with-apple).
    await scope.register(federationFormPostRoutes, { deps });
  });
  // contract.md#d28: each tenant's OpenID Provider, its own scope (the library reads its own bodies).
  await app.register(oidcRoutes, { deps });
  // The hosted pages (/ui/ and the contract.md#spec-4-6 link pages): their own scope, HTML errors, form bodies.
  await app.register(hostedPageRoutes, { deps });
  return app;
}
