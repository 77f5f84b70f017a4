import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { registerWithPassword, resendVerification } from "../../flows/registration.js";
import { verifyEmail } from "../../flows/verification.js";
import { BotField, EmailField, MessageBody, NameField, PasswordField, RecordIdField, TokenField } from "../schemas.js";
import { contextOf } from "../tenant.js";

const RegistrationBody = Type.Object({ success: Type.Literal(true), recordid: Type.String(), message: Type.String() });

export const registrationRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.post("/auth/register-password", {
    schema: {
      body: Type.Object({ email: EmailField, name: NameField, password: PasswordField, "bot-challenge-response": BotField }),
      response: { 200: RegistrationBody },
    },
  }, async (request) => {
    const { email, name, password } = request.body;
    const result = await registerWithPassword(deps, request.tenant, { email, name, password, botToken: request.body["bot-challenge-response"] }, contextOf(request));
    return { success: true as const, ...result };
  });

  app.post("/auth/verify-email", {
    schema: { body: Type.Object({ recordId: RecordIdField, token: TokenField }), response: { 200: MessageBody } },
  }, async (request) => {
    await verifyEmail(deps, request.tenant, request.body, contextOf(request));
    return { success: true as const, message: "Your email address has been verified." };
  });

  app.post("/auth/resend-verification", {
    schema: { body: Type.Object({ email: EmailField, "bot-challenge-response": BotField }), response: { 200: MessageBody } },
  }, async (request) => {
    const message = await resendVerification(deps, request.tenant, { email: request.body.email, botToken: request.body["bot-challenge-response"] }, contextOf(request));
    return { success: true as const, message };
  });
};
