/** Second-factor enrolment (D14). Every route needs the session cookie. */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { disableTwoFactor, enableTwoFactor, regenerateRecoveryCodes, setUpTwoFactor } from "../../flows/two-factor.js";
import { BODY_ERRORS, errorResponses, security, TENANT_ERRORS } from "../openapi.js";
import { described, MessageBody, NoBodyNeeded, PasswordField } from "../schemas.js";
import { requireSession } from "../session-cookie.js";
import { contextOf } from "../tenant.js";

const CodeField = Type.String({ minLength: 1, maxLength: 32 });
export const RecoveryCodesBody = described(
  Type.Object({ success: Type.Literal(true), recoveryCodes: Type.Array(Type.String()) }),
  "10 one-time recovery codes, shown only this once; any earlier set stops working.",
);
export const SetupBody = described(
  Type.Object({ success: Type.Literal(true), secret: Type.String(), otpauthUrl: Type.String(), qrCodeDataUrl: Type.String() }),
  "A pending TOTP secret (base32), its `otpauth://` URI, and that URI as a PNG data URL. It takes effect only after `/auth/2fa/enable`.",
);
export const EnableTwoFactorBody = Type.Object({ code: CodeField });
/** The password or a current code, at least one (the password wins when both come). */
export const DisableTwoFactorBody = Type.Union([
  Type.Object({ password: PasswordField, code: Type.Optional(CodeField) }),
  Type.Object({ password: Type.Optional(PasswordField), code: described(CodeField, "A TOTP or recovery code.") }),
]);
export const RegenerateRecoveryCodesBody = Type.Object({ code: CodeField });
const SESSION_ERRORS = [...TENANT_ERRORS, ...BODY_ERRORS, "unauthorized", "invalid_state"] as const;

export const twoFactorRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  app.post(
    "/auth/2fa/setup",
    {
      schema: {
        summary: "Start TOTP enrolment",
        description: "D14. Each call replaces the pending secret until one is confirmed. 409 `invalid_state` when 2FA is already enabled.",
        tags: ["two-factor"],
        operationId: "setUpTwoFactor",
        security: security.session,
        body: NoBodyNeeded,
        response: { 200: SetupBody, ...errorResponses(...SESSION_ERRORS) },
      },
    },
    async (request) => {
      const session = await requireSession(deps, request);
      return { success: true as const, ...(await setUpTwoFactor(deps, request.tenant, session, contextOf(request))) };
    },
  );

  app.post(
    "/auth/2fa/enable",
    {
      schema: {
        summary: "Confirm enrolment with a first TOTP code",
        description:
          "D14. Needs a pending secret from `/auth/2fa/setup`. 3 wrong codes lock the second factor for 15 minutes. On success every other session of the member ends; this one stays.",
        tags: ["two-factor"],
        operationId: "enableTwoFactor",
        security: security.session,
        body: EnableTwoFactorBody,
        response: { 200: RecoveryCodesBody, ...errorResponses(...SESSION_ERRORS, "invalid_2fa_code", "rate_limited") },
      },
    },
    async (request) => {
      const session = await requireSession(deps, request);
      return { success: true as const, recoveryCodes: await enableTwoFactor(deps, request.tenant, session, request.body.code, contextOf(request)) };
    },
  );

  app.post(
    "/auth/2fa/disable",
    {
      schema: {
        summary: "Turn the second factor off",
        description:
          "D14. Needs the password or a current code (TOTP or recovery code): the session alone is not enough. Without either, 400 `validation_failed`.",
        tags: ["two-factor"],
        operationId: "disableTwoFactor",
        security: security.session,
        body: DisableTwoFactorBody,
        response: {
          200: described(MessageBody, "2FA is off."),
          ...errorResponses(...SESSION_ERRORS, "invalid_credentials", "invalid_2fa_code", "rate_limited"),
        },
      },
    },
    async (request) => {
      const session = await requireSession(deps, request);
      await disableTwoFactor(deps, request.tenant, session, request.body, contextOf(request));
      return { success: true as const, message: "Two-factor authentication is disabled." };
    },
  );

  app.post(
    "/auth/2fa/recovery-codes",
    {
      schema: {
        summary: "Replace the recovery codes",
        description: "D14. Needs a current code (TOTP or recovery code); the old set stops working.",
        tags: ["two-factor"],
        operationId: "regenerateRecoveryCodes",
        security: security.session,
        body: RegenerateRecoveryCodesBody,
        response: { 200: RecoveryCodesBody, ...errorResponses(...SESSION_ERRORS, "invalid_2fa_code", "rate_limited") },
      },
    },
    async (request) => {
      const session = await requireSession(deps, request);
      return { success: true as const, recoveryCodes: await regenerateRecoveryCodes(deps, request.tenant, session, request.body.code, contextOf(request)) };
    },
  );
};
