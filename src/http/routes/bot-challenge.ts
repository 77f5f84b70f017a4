/** GET /auth/bot-challenge (D10): a fresh ALTCHA challenge for the widget, for ALTCHA tenants only. */
import type { FastifyPluginAsync } from "fastify";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import { enforceRateLimit } from "../../flows/guards.js";
import { rateRules } from "../../security/rate-limit.js";
import { errorResponses, TENANT_ERRORS } from "../openapi.js";
import { described } from "../schemas.js";

/**
 * altcha-lib's challenge, passed through as it is: the widget's format, owned by altcha-lib. Open
 * objects, so the serialiser neither drops nor reorders a field the signature covers.
 */
export const ChallengeBody = described(
  Type.Object({
    parameters: Type.Object({}, { additionalProperties: true, description: "Algorithm, cost, salt, nonce, key prefix and signed `data` (tenant and expiry)." }),
    signature: Type.Optional(Type.String()),
  }, { additionalProperties: true }),
  "An HMAC-signed ALTCHA v2 challenge, valid for 10 minutes. Give it to the ALTCHA widget; its solution goes in `bot-challenge-response`, once.",
);

export const botChallengeRoutes: FastifyPluginAsync<{ deps: Deps }> = async (app, { deps }) => {
  app.get("/auth/bot-challenge", {
    schema: {
      summary: "Get an ALTCHA challenge",
      description: "D10. Only for tenants whose bot protection is `altcha` (the default); other tenants get 404 `not_found`. Rate-limited per IP.",
      tags: ["bot"],
      operationId: "getBotChallenge",
      response: { 200: ChallengeBody, ...errorResponses(...TENANT_ERRORS, "not_found", "rate_limited") },
    },
  }, async (request, reply) => {
    const tenant = request.tenant;
    if (tenant.settings.botProtection.provider !== "altcha") throw new AuthError("not_found");
    const now = deps.clock.now();
    // Issuing costs one key derivation: bounded per IP so the endpoint can't be used to burn CPU.
    await enforceRateLimit(deps, tenant, rateRules.botChallengePerIp, request.ip, now);
    void reply.header("cache-control", "no-store");
    return deps.altcha.createChallenge(tenant.id, now);
  });
};
