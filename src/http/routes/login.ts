import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { loginWithPassword } from "../../flows/login.js";
import { logout } from "../../flows/sessions.js";
import { BotField, EmailField, MessageBody, PasswordField, TwoFactorCodeField } from "../schemas.js";
import { clearSessionCookie, requireSession, setSessionCookie } from "../session-cookie.js";
import { contextOf, SESSION_COOKIE } from "../tenant.js";

const LoginAnswer = Type.Union([
  Type.Object({ authorized: Type.Literal(true), recordid: Type.String(), redirectUrl: Type.String() }),
  Type.Object({ authorized: Type.Literal(false), two_factor_required: Type.Literal(true), message: Type.String() }),
]);

const SessionAnswer = Type.Object({
  recordId: Type.String(),
  hostname: Type.String(),
  iat: Type.Integer(),
  exp: Type.Integer(),
  is2FAEnabled: Type.Boolean(),
  require2FASetup: Type.Boolean(),
  passwordChangePending: Type.Boolean(),
  loginContext: Type.Null(),
  attemptedPath: Type.Null(),
});

export const loginRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.post("/auth/login", {
    schema: {
      body: Type.Object({ email: EmailField, password: PasswordField, twoFACode: TwoFactorCodeField, "bot-challenge-response": BotField }),
      response: { 200: LoginAnswer },
    },
  }, async (request, reply) => {
    const { email, password, twoFACode } = request.body;
    const result = await loginWithPassword(deps, request.tenant, { email, password, twoFACode, botToken: request.body["bot-challenge-response"] }, contextOf(request));
    if (!result.authorized) return { authorized: false as const, two_factor_required: true as const, message: result.message };
    setSessionCookie(reply, result.session);
    return { authorized: true as const, recordid: result.recordid, redirectUrl: result.redirectUrl };
  });

  app.get("/auth/session", { schema: { response: { 200: SessionAnswer } } }, async (request) => {
    const session = await requireSession(deps, request);
    return session.data;
  });

  app.post("/auth/logout", { schema: { response: { 200: MessageBody } } }, async (request, reply) => {
    await logout(deps, request.tenant, request.cookies[SESSION_COOKIE]);
    clearSessionCookie(reply);
    return { success: true as const, message: "You have been logged out." };
  });
};
