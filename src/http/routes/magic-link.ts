import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { registerWithMagicLink, requestMagicLink, verifyMagicLink } from "../../flows/magic-link.js";
import { BotField, EmailField, MessageBody, NameField, RecordIdField, TokenField, TwoFactorCodeField } from "../schemas.js";
import { setSessionCookie } from "../session-cookie.js";
import { contextOf } from "../tenant.js";

const RegistrationBody = Type.Object({ success: Type.Literal(true), recordid: Type.String(), message: Type.String() });
const MagicLoginAnswer = Type.Union([
  Type.Object({ success: Type.Literal(true), message: Type.String(), redirect: Type.String() }),
  Type.Object({ success: Type.Literal(false), requires2FA: Type.Literal(true), message: Type.String() }),
]);

export const magicLinkRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.post("/auth/register-magic-link", {
    schema: { body: Type.Object({ email: EmailField, name: NameField, "bot-challenge-response": BotField }), response: { 200: RegistrationBody } },
  }, async (request) => {
    const { email, name } = request.body;
    const result = await registerWithMagicLink(deps, request.tenant, { email, name, botToken: request.body["bot-challenge-response"] }, contextOf(request));
    return { success: true as const, ...result };
  });

  app.post("/auth/request-magic-link", {
    schema: { body: Type.Object({ email: EmailField, "bot-challenge-response": BotField }), response: { 200: MessageBody } },
  }, async (request) => {
    const message = await requestMagicLink(deps, request.tenant, { email: request.body.email, botToken: request.body["bot-challenge-response"] }, contextOf(request));
    return { success: true as const, message };
  });

  // The token is in the path (spec 4.4); the request serializer masks it in logs (src/logging.ts).
  app.post("/auth/verify-magic-link/:recordId/:token", {
    schema: {
      params: Type.Object({ recordId: RecordIdField, token: TokenField }),
      body: Type.Object({ "bot-challenge-response": BotField, twoFACode: TwoFactorCodeField }),
      response: { 200: MagicLoginAnswer },
    },
  }, async (request, reply) => {
    const { recordId, token } = request.params;
    const result = await verifyMagicLink(deps, request.tenant, { recordId, token, botToken: request.body["bot-challenge-response"], twoFACode: request.body.twoFACode }, contextOf(request));
    if (!result.success) return result;
    setSessionCookie(reply, result.session);
    return { success: true as const, message: result.message, redirect: result.redirect };
  });
};
