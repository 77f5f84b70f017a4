import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { changePassword } from "../../flows/password-change.js";
import { requestPasswordReset, resetPassword } from "../../flows/password-reset.js";
import { BotField, EmailField, MessageBody, PasswordField, RecordIdField, TokenField } from "../schemas.js";
import { requireSession } from "../session-cookie.js";
import { contextOf } from "../tenant.js";

export const passwordRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.post("/auth/forgot-password", {
    schema: { body: Type.Object({ email: EmailField, "bot-challenge-response": BotField }), response: { 200: MessageBody } },
  }, async (request) => {
    const message = await requestPasswordReset(deps, request.tenant, { email: request.body.email, botToken: request.body["bot-challenge-response"] }, contextOf(request));
    return { success: true as const, message };
  });

  app.post("/auth/reset-password", {
    schema: { body: Type.Object({ recordId: RecordIdField, token: TokenField, newPassword: PasswordField }), response: { 200: MessageBody } },
  }, async (request) => {
    const message = await resetPassword(deps, request.tenant, request.body, contextOf(request));
    return { success: true as const, message };
  });

  app.post("/auth/change-password", {
    schema: { body: Type.Object({ currentPassword: PasswordField, newPassword: PasswordField }), response: { 200: MessageBody } },
  }, async (request) => {
    const session = await requireSession(deps, request);
    const message = await changePassword(deps, request.tenant, session, request.body, contextOf(request));
    return { success: true as const, message };
  });
};
