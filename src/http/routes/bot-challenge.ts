/** GET /auth/bot-challenge (D10): a fresh ALTCHA challenge for the widget, for ALTCHA tenants only. */
import type { FastifyPluginAsync } from "fastify";
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import { enforceRateLimit } from "../../flows/guards.js";
import { rateRules } from "../../security/rate-limit.js";

export const botChallengeRoutes: FastifyPluginAsync<{ deps: Deps }> = async (app, { deps }) => {
  app.get("/auth/bot-challenge", async (request, reply) => {
    const tenant = request.tenant;
    if (tenant.settings.botProtection.provider !== "altcha") throw new AuthError("not_found");
    const now = deps.clock.now();
    // Issuing costs one key derivation: bounded per IP so the endpoint can't be used to burn CPU.
    await enforceRateLimit(deps, tenant, rateRules.botChallengePerIp, request.ip, now);
    void reply.header("cache-control", "no-store");
    return deps.altcha.createChallenge(tenant.id, now);
  });
};
