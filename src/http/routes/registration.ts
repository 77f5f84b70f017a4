import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { registerWithPassword, resendVerification } from "../../flows/registration/registration.js";
import { verifyEmail } from "../../flows/registration/verification.js";
import { BODY_ERRORS, BOT_ERRORS, errorResponses, NEW_PASSWORD_ERRORS, TENANT_ERRORS } from "../openapi.js";
import { BotField, described, EmailField, MessageBody, NameField, PasswordField, RecordIdField, TokenField } from "../schemas.js";
import { contextOf } from "../tenant.js";

export const RegistrationBody = described(
  Type.Object({ success: Type.Literal(true), recordid: Type.String(), message: Type.String() }),
  "Registered; the verification email goes out through the tenant's webhook. An email that is already registered gets the same answer with a decoy `recordid`.",
);

export const RegisterPasswordBody = Type.Object({ email: EmailField, name: NameField, password: PasswordField, "bot-challenge-response": BotField });
export const VerifyEmailBody = Type.Object({
  recordId: RecordIdField,
  token: TokenField,
  password: Type.Optional(
    described(
      PasswordField,
      "Only with a link that carries no password (a resend, or an email-only registration): becomes the account's password, after the policy and breach checks.",
    ),
  ),
});
export const VerifyEmailAnswer = described(
  Type.Object({ success: Type.Literal(true), message: Type.String(), passwordSet: Type.Boolean() }),
  "Verified: the account is `Unlocked`. `passwordSet` says whether it now has a password (the registration's, or the one sent); without one the member logs in by magic link or sets one through forgot-password.",
);
export const ResendVerificationBody = Type.Object({ email: EmailField, "bot-challenge-response": BotField });

export const registrationRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.post(
    "/auth/register-password",
    {
      schema: {
        summary: "Register with email and password",
        description: "Checks, in order: bot challenge, the per-IP and per-email registration limits, the password policy, the breached-password check.",
        tags: ["registration"],
        operationId: "registerWithPassword",
        body: RegisterPasswordBody,
        response: { 200: RegistrationBody, ...errorResponses(...TENANT_ERRORS, ...BODY_ERRORS, ...BOT_ERRORS, ...NEW_PASSWORD_ERRORS, "rate_limited") },
      },
    },
    async (request) => {
      const { email, name, password } = request.body;
      const result = await registerWithPassword(
        deps,
        request.tenant,
        { email, name, password, botToken: request.body["bot-challenge-response"] },
        contextOf(request),
      );
      return { success: true as const, ...result };
    },
  );

  app.post(
    "/auth/verify-email",
    {
      schema: {
        summary: "Verify the email address with the emailed link",
        description:
          "`recordId` and `token` are the last two segments of the `verificationLink`. The token works once, and using it voids every other verification link of the account. A link sent at registration makes the account what that registration asked for (its password, name and type). A resend link carries no password: send `password` with it to choose one, or leave it out to verify without a password. A `password` with a link that already sets one is refused (400 `validation_failed`) and leaves the link usable, as does a weak or breached one.",
        tags: ["registration"],
        operationId: "verifyEmail",
        body: VerifyEmailBody,
        response: { 200: VerifyEmailAnswer, ...errorResponses(...TENANT_ERRORS, ...BODY_ERRORS, ...NEW_PASSWORD_ERRORS, "invalid_token") },
      },
    },
    async (request) => {
      const { passwordSet } = await verifyEmail(deps, request.tenant, request.body, contextOf(request));
      return { success: true as const, message: "Your email address has been verified.", passwordSet };
    },
  );

  app.post(
    "/auth/resend-verification",
    {
      schema: {
        summary: "Send the verification email again",
        description: "The answer is the same whether or not the email is registered; only an account still waiting for verification gets an email.",
        tags: ["registration"],
        operationId: "resendVerification",
        body: ResendVerificationBody,
        response: {
          200: described(MessageBody, "Generic success, the same for every email."),
          ...errorResponses(...TENANT_ERRORS, ...BODY_ERRORS, ...BOT_ERRORS, "rate_limited"),
        },
      },
    },
    async (request) => {
      const message = await resendVerification(
        deps,
        request.tenant,
        { email: request.body.email, botToken: request.body["bot-challenge-response"] },
        contextOf(request),
      );
      return { success: true as const, message };
    },
  );
};
