/** contract.md#d28: `POST /auth/session/token`, a short-lived JWT of the session for a tenant's backends (decisions.md#session-tokens). */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { issueSessionToken, SESSION_TOKEN_TYPE } from "../../flows/oidc/session-token.js";
import { describeDuration, SESSION_TOKEN_LIFETIME_MS } from "../../rules.js";
import { BODY_ERRORS, errorResponses, security, TENANT_ERRORS } from "../openapi.js";
import { described, NoBodyNeeded, Timestamp } from "../schemas.js";
import { requireSession } from "../session-cookie.js";

export const SessionTokenBody = described(
  Type.Object({
    success: Type.Literal(true),
    token: Type.String({ description: `A compact JWS (ES256, header \`typ: "${SESSION_TOKEN_TYPE}"\` and \`kid\`).` }),
    expiresAt: described(Timestamp, "The token's `exp`."),
  }),
  "The session token.",
);

export const sessionTokenRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.post(
    "/auth/session/token",
    {
      schema: {
        summary: "Get a short-lived JWT of the session",
        description: `For a backend that verifies the session itself, with the tenant's JWKS at \`/oauth/jwks\`, instead of calling \`GET /auth/session\`. The token lives ${describeDuration(SESSION_TOKEN_LIFETIME_MS)}, and never past the session. It is signed with the tenant's current ES256 key; the header has \`kid\` and \`typ: "${SESSION_TOKEN_TYPE}"\`. Claims: \`iss\` \`https://{hostname}\`, \`aud\` the tenant's hostname, \`sub\` the member's \`recordid\`, \`sid\` the session's public id (as in \`GET /auth/sessions\`), \`amr\` how the session was opened (\`pwd\`, \`otp\`, \`mfa\`, \`hwk\` for a passkey, \`fed\`, \`email\` for a magic link or emailed code), \`auth_time\`, \`iat\`, \`exp\`. A verifier checks the signature, \`iss\`, \`aud\`, \`typ\` and \`exp\`. A session in \`Password Change Pending\` gets 403 \`password_change_required\`, and one of a member who must turn on the tenant's required 2FA 409 \`invalid_state\`: a backend never sees those flags. Send no body (or a JSON one).`,
        tags: ["sessions"],
        operationId: "sessionToken",
        security: security.session,
        body: NoBodyNeeded,
        response: {
          200: SessionTokenBody,
          ...errorResponses(...TENANT_ERRORS, ...BODY_ERRORS, "unauthorized", "password_change_required", "invalid_state"),
        },
      },
    },
    async (request) => {
      const session = await requireSession(deps, request);
      return { success: true as const, ...(await issueSessionToken(deps, request.tenant, session)) };
    },
  );
};
