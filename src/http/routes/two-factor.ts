/** Second-factor enrolment (D14). Every route needs the session cookie. */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { disableTwoFactor, enableTwoFactor, regenerateRecoveryCodes, setUpTwoFactor } from "../../flows/two-factor.js";
import { MessageBody, PasswordField } from "../schemas.js";
import { requireSession } from "../session-cookie.js";
import { contextOf } from "../tenant.js";

const CodeField = Type.String({ minLength: 1, maxLength: 32 });
const RecoveryCodesBody = Type.Object({ success: Type.Literal(true), recoveryCodes: Type.Array(Type.String()) });

export const twoFactorRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.post("/auth/2fa/setup", {
    schema: { response: { 200: Type.Object({ success: Type.Literal(true), secret: Type.String(), otpauthUrl: Type.String(), qrCodeDataUrl: Type.String() }) } },
  }, async (request) => {
    const session = await requireSession(deps, request);
    return { success: true as const, ...(await setUpTwoFactor(deps, request.tenant, session, contextOf(request))) };
  });

  app.post("/auth/2fa/enable", {
    schema: { body: Type.Object({ code: CodeField }), response: { 200: RecoveryCodesBody } },
  }, async (request) => {
    const session = await requireSession(deps, request);
    return { success: true as const, recoveryCodes: await enableTwoFactor(deps, request.tenant, session, request.body.code, contextOf(request)) };
  });

  app.post("/auth/2fa/disable", {
    schema: { body: Type.Object({ password: Type.Optional(PasswordField), code: Type.Optional(CodeField) }), response: { 200: MessageBody } },
  }, async (request) => {
    const session = await requireSession(deps, request);
    await disableTwoFactor(deps, request.tenant, session, request.body, contextOf(request));
    return { success: true as const, message: "Two-factor authentication is disabled." };
  });

  app.post("/auth/2fa/recovery-codes", {
    schema: { body: Type.Object({ code: CodeField }), response: { 200: RecoveryCodesBody } },
  }, async (request) => {
    const session = await requireSession(deps, request);
    return { success: true as const, recoveryCodes: await regenerateRecoveryCodes(deps, request.tenant, session, request.body.code, contextOf(request)) };
  });
};
