import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { changePassword } from "../../flows/password/password-change.js";
import { requestPasswordReset, resetPassword } from "../../flows/password/password-reset.js";
import { BODY_ERRORS, BOT_ERRORS, errorResponses, NEW_PASSWORD_ERRORS, security, TENANT_ERRORS } from "../openapi.js";
import { BotField, described, EmailField, MessageBody, PasswordField, RecordIdField, TokenField } from "../schemas.js";
import { requireSession } from "../session-cookie.js";
import { contextOf } from "../tenant.js";

export const ForgotPasswordBody = Type.Object({ email: EmailField, "bot-challenge-response": BotField });
export const ResetPasswordBody = Type.Object({ recordId: RecordIdField, token: TokenField, newPassword: PasswordField });
export const ChangePasswordBody = Type.Object({ currentPassword: PasswordField, newPassword: PasswordField });

export const passwordRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.post(
    "/auth/forgot-password",
    {
      schema: {
        summary: "Email a password reset link",
        description: "Unknown and locked emails get the same success and nothing is sent. For an existing account, this also ends every session of the member.",
        tags: ["passwords"],
        operationId: "requestPasswordReset",
        body: ForgotPasswordBody,
        response: {
          200: described(MessageBody, "Generic success, the same whether or not a link was sent."),
          ...errorResponses(...TENANT_ERRORS, ...BODY_ERRORS, ...BOT_ERRORS, "rate_limited"),
        },
      },
    },
    async (request) => {
      const message = await requestPasswordReset(
        deps,
        request.tenant,
        { email: request.body.email, botToken: request.body["bot-challenge-response"] },
        contextOf(request),
      );
      return { success: true as const, message };
    },
  );

  app.post(
    "/auth/reset-password",
    {
      schema: {
        summary: "Set a new password with the emailed reset link",
        description:
          "`recordId` and `token` are the last two segments of the `resetLink`. On success every session ends and the account is `Unlocked`. A password that fails the policy leaves the link valid.",
        tags: ["passwords"],
        operationId: "resetPassword",
        body: ResetPasswordBody,
        response: {
          200: described(MessageBody, "The password is reset."),
          ...errorResponses(...TENANT_ERRORS, ...BODY_ERRORS, ...NEW_PASSWORD_ERRORS, "invalid_token"),
        },
      },
    },
    async (request) => {
      const message = await resetPassword(deps, request.tenant, request.body, contextOf(request));
      return { success: true as const, message };
    },
  );

  app.post(
    "/auth/change-password",
    {
      schema: {
        summary: "Change the password of the logged-in member",
        description: "Every other session of the member ends; this one stays. Wrong current passwords count towards the same lockout as login.",
        tags: ["passwords"],
        operationId: "changePassword",
        security: security.session,
        body: ChangePasswordBody,
        response: {
          200: described(MessageBody, "The password is changed."),
          ...errorResponses(...TENANT_ERRORS, ...BODY_ERRORS, ...NEW_PASSWORD_ERRORS, "unauthorized", "invalid_credentials", "rate_limited"),
        },
      },
    },
    async (request) => {
      const session = await requireSession(deps, request);
      const message = await changePassword(deps, request.tenant, session, request.body, contextOf(request));
      return { success: true as const, message };
    },
  );
};
