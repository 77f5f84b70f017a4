import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { loginWithPassword } from "../../flows/login/login.js";
import { logout } from "../../flows/kernel/sessions.js";
import { BODY_ERRORS, BOT_ERRORS, ClearSessionCookieHeader, errorResponses, security, SetSessionCookieHeader, TENANT_ERRORS } from "../openapi.js";
import { BotField, described, EmailField, MessageBody, NoBodyNeeded, PasswordField, TwoFactorCodeField } from "../schemas.js";
import { loginAnswer } from "../login-answers.js";
import { clearSessionCookie, requireSession } from "../session-cookie.js";
import { contextOf, SESSION_COOKIE } from "../tenant.js";

export const LoginBody = Type.Object({ email: EmailField, password: PasswordField, twoFACode: TwoFactorCodeField, "bot-challenge-response": BotField });

export const LoginAnswer = described(
  Type.Union([
    Type.Object({ authorized: Type.Literal(true), recordid: Type.String(), redirectUrl: Type.String() }),
    Type.Object({ authorized: Type.Literal(false), two_factor_required: Type.Literal(true), message: Type.String() }),
  ]),
  "Logged in (`authorized: true`, the cookie is set), or the member has 2FA and must send the request again with `twoFACode` (`authorized: false`, no cookie).",
  SetSessionCookieHeader,
);

export const SessionAnswer = described(
  Type.Object({
    recordId: Type.String(),
    hostname: Type.String(),
    iat: Type.Integer(),
    exp: Type.Integer(),
    is2FAEnabled: Type.Boolean(),
    require2FASetup: Type.Boolean(),
    passwordChangePending: Type.Boolean(),
    loginContext: Type.Null(),
    attemptedPath: Type.Null(),
  }),
  "The session's data; `iat` and `exp` are Unix seconds.",
);

export const loginRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.post(
    "/auth/login",
    {
      config: { errorBodyFields: { authorized: false } },
      schema: {
        summary: "Log in with email and password",
        description:
          "Order: bot challenge, lockout and login velocity, password, account status, second factor. A wrong password always answers `invalid_credentials`; the account's status is told only to someone who gave the right password. Error bodies carry `authorized: false`.",
        tags: ["login"],
        operationId: "loginWithPassword",
        body: LoginBody,
        response: {
          200: LoginAnswer,
          ...errorResponses(
            ...TENANT_ERRORS,
            ...BODY_ERRORS,
            ...BOT_ERRORS,
            "invalid_credentials",
            "invalid_2fa_code",
            "email_not_verified",
            "account_locked",
            "password_change_required",
            "rate_limited",
          ),
        },
      },
    },
    async (request, reply) => {
      const { email, password, twoFACode } = request.body;
      const result = await loginWithPassword(
        deps,
        request.tenant,
        { email, password, twoFACode, botToken: request.body["bot-challenge-response"] },
        contextOf(request),
      );
      return loginAnswer(reply, result);
    },
  );

  app.get(
    "/auth/session",
    {
      schema: {
        summary: "Read the current session",
        description: "A session is valid only for the tenant that created it.",
        tags: ["sessions"],
        operationId: "getSession",
        security: security.session,
        response: { 200: SessionAnswer, ...errorResponses(...TENANT_ERRORS, "unauthorized") },
      },
    },
    async (request) => {
      const session = await requireSession(deps, request);
      return session.data;
    },
  );

  app.post(
    "/auth/logout",
    {
      schema: {
        summary: "Log out",
        description: "Deletes the session and clears the cookie. Answers 200 without a session too. Send no body (or a JSON one).",
        tags: ["sessions"],
        operationId: "logout",
        security: [...security.session, {}],
        body: NoBodyNeeded,
        response: {
          200: described(MessageBody, "Logged out; `Set-Cookie` clears `session_id`.", ClearSessionCookieHeader),
          ...errorResponses(...TENANT_ERRORS, ...BODY_ERRORS),
        },
      },
    },
    async (request, reply) => {
      await logout(deps, request.tenant, request.cookies[SESSION_COOKIE]);
      clearSessionCookie(reply);
      return { success: true as const, message: "You have been logged out." };
    },
  );
};
