import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { verifyLoginCode } from "../../flows/login/login-code.js";
import { requestMagicLink, verifyMagicLink } from "../../flows/login/magic-link.js";
import { registerWithMagicLink } from "../../flows/registration/registration.js";
import { BODY_ERRORS, BOT_ERRORS, errorResponses, SetSessionCookieHeader, TENANT_ERRORS } from "../openapi.js";
import { BotField, described, EmailField, LOGIN_CODE_PATTERN, MessageBody, NameField, RecordIdField, TokenField, TwoFactorCodeField } from "../schemas.js";
import { magicLoginAnswer } from "../login-answers.js";
import { contextOf } from "../tenant.js";
import { RegistrationBody } from "./registration.js";
import { describeDuration, describeWindow, LOGIN_CODE_DIGITS, rateRules } from "../../rules.js";

export const RegisterMagicLinkBody = Type.Object({ email: EmailField, name: NameField, "bot-challenge-response": BotField });
export const RequestMagicLinkBody = Type.Object({ email: EmailField, "bot-challenge-response": BotField });
export const VerifyMagicLinkParams = Type.Object({ recordId: RecordIdField, token: TokenField });
export const VerifyMagicLinkBody = Type.Object({ "bot-challenge-response": BotField, twoFACode: TwoFactorCodeField });
export const VerifyLoginCodeBody = Type.Object({
  email: EmailField,
  code: Type.String({ pattern: `^${LOGIN_CODE_PATTERN}$`, description: `The ${LOGIN_CODE_DIGITS}-digit \`code\` of the \`magic_login\` webhook.` }),
  "bot-challenge-response": BotField,
  twoFACode: TwoFactorCodeField,
});

export const MagicLoginAnswer = described(
  Type.Union([
    Type.Object({ success: Type.Literal(true), message: Type.String(), redirect: Type.String() }),
    Type.Object({ success: Type.Literal(false), requires2FA: Type.Literal(true), message: Type.String() }),
  ]),
  "Logged in (`success: true`, the cookie is set, `redirect` is the tenant's `loginSuccessRedirect`), or the member has 2FA and must send the same link again with `twoFACode` and a fresh bot token (`requires2FA: true`, no cookie; the link stays valid).",
  SetSessionCookieHeader,
);

export const magicLinkRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.post(
    "/auth/register-magic-link",
    {
      schema: {
        summary: "Register with email alone",
        description: "Like password registration, without a password: bot challenge and registration limits, then the verification email.",
        tags: ["registration"],
        operationId: "registerWithMagicLink",
        body: RegisterMagicLinkBody,
        response: { 200: RegistrationBody, ...errorResponses(...TENANT_ERRORS, ...BODY_ERRORS, ...BOT_ERRORS, "rate_limited") },
      },
    },
    async (request) => {
      const { email, name } = request.body;
      const result = await registerWithMagicLink(deps, request.tenant, { email, name, botToken: request.body["bot-challenge-response"] }, contextOf(request));
      return { success: true as const, ...result };
    },
  );

  app.post(
    "/auth/request-magic-link",
    {
      schema: {
        summary: "Email a one-time login link",
        description: `Unknown and locked emails get the same success and nothing is sent; an unverified email answers 403 \`email_not_verified\`. One request per email every ${describeDuration(rateRules.magicLinkCooldown.windowMs)}.`,
        tags: ["magic-link"],
        operationId: "requestMagicLink",
        body: RequestMagicLinkBody,
        response: {
          200: described(MessageBody, "Generic success, the same whether or not a link was sent."),
          ...errorResponses(...TENANT_ERRORS, ...BODY_ERRORS, ...BOT_ERRORS, "email_not_verified", "rate_limited"),
        },
      },
    },
    async (request) => {
      const message = await requestMagicLink(
        deps,
        request.tenant,
        { email: request.body.email, botToken: request.body["bot-challenge-response"] },
        contextOf(request),
      );
      return { success: true as const, message };
    },
  );

  // The token is in the path (contract.md#spec-4-4); the request serializer masks it in logs (src/logging.ts).
  app.post(
    "/auth/verify-magic-link/:recordId/:token",
    {
      schema: {
        summary: "Log in with a magic link",
        description: "`recordId` and `token` are the last two segments of the `magicLoginLink`. The link is used up only by a successful login.",
        tags: ["magic-link"],
        operationId: "verifyMagicLink",
        params: VerifyMagicLinkParams,
        body: VerifyMagicLinkBody,
        response: {
          200: MagicLoginAnswer,
          ...errorResponses(...TENANT_ERRORS, ...BODY_ERRORS, ...BOT_ERRORS, "invalid_token", "account_locked", "invalid_2fa_code", "rate_limited"),
        },
      },
    },
    async (request, reply) => {
      const { recordId, token } = request.params;
      const result = await verifyMagicLink(
        deps,
        request.tenant,
        { recordId, token, botToken: request.body["bot-challenge-response"], twoFACode: request.body.twoFACode },
        contextOf(request),
      );
      return magicLoginAnswer(reply, result);
    },
  );

  app.post(
    "/auth/verify-login-code",
    {
      schema: {
        summary: "Log in with the code of a magic link email",
        description:
          "The `code` of the latest `magic_login` webhook for the email, for a member reading the email on another device: the same lifetime and single use as its link (using either uses both), and a login like the link's. " +
          `At most ${rateRules.loginCodeComparisons.limit} codes are compared per email in ${describeDuration(rateRules.loginCodeComparisons.windowMs)}, right or wrong: after ${rateRules.loginCodeComparisons.limit} wrong ones the code is void (429 until the ${describeDuration(rateRules.loginCodeComparisons.windowMs)} end; the link still works). An unknown email, an email with no live link and a wrong code get the same 400 \`invalid_token\`. ${rateRules.loginCodePerIp.limit} attempts per IP per ${describeWindow(rateRules.loginCodePerIp.windowMs)} and per email per ${describeWindow(rateRules.loginCodePerEmail.windowMs)}.`,
        tags: ["magic-link"],
        operationId: "verifyLoginCode",
        body: VerifyLoginCodeBody,
        response: {
          200: MagicLoginAnswer,
          ...errorResponses(...TENANT_ERRORS, ...BODY_ERRORS, ...BOT_ERRORS, "invalid_token", "account_locked", "invalid_2fa_code", "rate_limited"),
        },
      },
    },
    async (request, reply) => {
      const { email, code, twoFACode } = request.body;
      const result = await verifyLoginCode(
        deps,
        request.tenant,
        { email, code, botToken: request.body["bot-challenge-response"], twoFACode },
        contextOf(request),
      );
      return magicLoginAnswer(reply, result);
    },
  );
};
