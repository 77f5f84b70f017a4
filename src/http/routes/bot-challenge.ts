/** GET /auth/bot-challenge (contract.md#d10): a fresh ALTCHA challenge for the widget, for ALTCHA tenants only. */
import type { FastifyPluginAsync } from "fastify";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import { enforceRateLimit } from "../../flows/kernel/guards.js";
import { ALTCHA_CHALLENGE_TTL_MS, describeDuration, rateRules } from "../../rules.js";
import { errorResponses, TENANT_ERRORS } from "../openapi.js";
import { described } from "../schemas.js";

/**
 * altcha-lib's challenge (v2 `Challenge`), passed through as it is: the widget's format, owned by
 * altcha-lib. Its fields are typed for the document, in the key order altcha-lib sends (sorted,
 * as it signs them), and the objects stay open, so the serialiser neither drops nor reorders a
 * field the signature covers. The SDK's BotChallengeResponse is this type (test/client-types.test.ts).
 */
const ChallengeParameters = Type.Object(
  {
    algorithm: Type.String({ description: "The key derivation: `PBKDF2/SHA-256` (or `SHA-256`)." }),
    cost: Type.Integer({ minimum: 1, description: "Iterations of the key derivation." }),
    data: Type.Optional(
      Type.Object(
        {
          exp: Type.Integer({ description: "Expiry, Unix milliseconds." }),
          tenant: Type.String({ description: "The tenant's id: a challenge counts for its own tenant only." }),
        },
        { additionalProperties: true, description: "Signed with the parameters." },
      ),
    ),
    expiresAt: Type.Optional(Type.Integer()),
    keyLength: Type.Integer({ minimum: 1 }),
    keyPrefix: Type.String({ description: "Hex: the derived key the widget searches for starts with it." }),
    keySignature: Type.Optional(Type.String()),
    memoryCost: Type.Optional(Type.Integer()),
    nonce: Type.String(),
    parallelism: Type.Optional(Type.Integer()),
    salt: Type.String(),
  },
  { additionalProperties: true },
);
export const ChallengeBody = described(
  Type.Object(
    {
      parameters: ChallengeParameters,
      signature: Type.Optional(Type.String({ description: "HMAC-SHA-256 of the parameters, hex." })),
    },
    { additionalProperties: true },
  ),
  `An HMAC-signed ALTCHA v2 challenge, valid for ${describeDuration(ALTCHA_CHALLENGE_TTL_MS)}. Give it to the ALTCHA widget; its solution goes in \`bot-challenge-response\`, once.`,
);

export const botChallengeRoutes: FastifyPluginAsync<{ deps: Deps }> = async (app, { deps }) => {
  app.get(
    "/auth/bot-challenge",
    {
      schema: {
        summary: "Get an ALTCHA challenge",
        description: "Only for tenants whose bot protection is `altcha` (the default); other tenants get 404 `not_found`. Rate-limited per IP.",
        tags: ["bot"],
        operationId: "getBotChallenge",
        response: { 200: ChallengeBody, ...errorResponses(...TENANT_ERRORS, "not_found", "rate_limited") },
      },
    },
    async (request, reply) => {
      const tenant = request.tenant;
      if (tenant.settings.botProtection.provider !== "altcha") throw new AuthError("not_found");
      const now = deps.clock.now();
      // Issuing costs one key derivation: bounded per IP so the endpoint can't be used to burn CPU.
      await enforceRateLimit(deps, tenant, rateRules.botChallengePerIp, request.ip, now);
      void reply.header("cache-control", "no-store");
      return deps.altcha.createChallenge(tenant.id, now);
    },
  );
};
