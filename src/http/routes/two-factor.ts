/** Second-factor enrolment (contract.md#d14). Every route needs the session cookie. */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { disableTwoFactor, enableTwoFactor, regenerateRecoveryCodes, setUpTwoFactor } from "../../flows/two-factor/two-factor.js";
import { BODY_ERRORS, errorResponses, security, TENANT_ERRORS } from "../openapi.js";
import { described, MessageBody, PasswordField, SecondFactorCodeField } from "../schemas.js";
import { requireSession } from "../session-cookie.js";
import { contextOf } from "../tenant.js";
import { describeDuration, FRESH_SESSION_MS, RECOVERY_CODE_COUNT, TWO_FACTOR_FAILURES_BEFORE_LOCKOUT, TWO_FACTOR_LOCKOUT_MS } from "../../rules.js";

const CodeField = SecondFactorCodeField;
export const RecoveryCodesBody = described(
  Type.Object({ success: Type.Literal(true), recoveryCodes: Type.Array(Type.String()) }),
  `${RECOVERY_CODE_COUNT} one-time recovery codes, shown only this once; any earlier set stops working.`,
);
export const SetupBody = described(
  Type.Object({ success: Type.Literal(true), secret: Type.String(), otpauthUrl: Type.String(), qrCodeDataUrl: Type.String() }),
  "A pending TOTP secret (base32), its `otpauth://` URI, and that URI as a PNG data URL. It takes effect only after `/auth/2fa/enable`.",
);
const ReauthenticationPassword = described(
  PasswordField,
  `Turning 2FA on re-authenticates, at setup or at enable. The member's password; a member without one re-authenticates with a session under ${describeDuration(FRESH_SESSION_MS)} old.`,
);
/** No body, or the password that re-authenticates at this step (contract.md#d30). */
export const SetUpTwoFactorBody = Type.Union([Type.Object({ password: Type.Optional(ReauthenticationPassword) }), Type.Null()], {
  description: "Send the password here to re-authenticate at setup, or no body and the password at enable.",
});
export const EnableTwoFactorBody = Type.Object({
  code: CodeField,
  password: Type.Optional(described(PasswordField, "Required when the member has a password, unless this session gave it at setup.")),
});
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
        description: `Each call replaces the pending secret until one is confirmed. 409 \`invalid_state\` when 2FA is already enabled. Turning 2FA on re-authenticates, here or at \`/auth/2fa/enable\`: with \`password\` (or, for a member without a password, a session under ${describeDuration(FRESH_SESSION_MS)} old) it happens here, and enable then needs only the code. The enrolment belongs to this session: no other session sees its secret or finishes it. A wrong password is 401 \`invalid_credentials\` and counts towards the login lockout.`,
        tags: ["two-factor"],
        operationId: "setUpTwoFactor",
        security: security.session,
        body: SetUpTwoFactorBody,
        response: { 200: SetupBody, ...errorResponses(...SESSION_ERRORS, "invalid_credentials", "password_change_required", "rate_limited") },
      },
    },
    async (request) => {
      const session = await requireSession(deps, request);
      return { success: true as const, ...(await setUpTwoFactor(deps, request.tenant, session, request.body ?? {}, contextOf(request))) };
    },
  );

  app.post(
    "/auth/2fa/enable",
    {
      schema: {
        summary: "Confirm enrolment with a first TOTP code",
        description: `Needs a pending secret that this session started with \`/auth/2fa/setup\` (409 \`invalid_state\` otherwise), and the re-authentication unless it was given at setup: \`password\` (400 \`validation_failed\` without it, 401 \`invalid_credentials\` when wrong), or for a member without a password a session under ${describeDuration(FRESH_SESSION_MS)} old (else 401). ${TWO_FACTOR_FAILURES_BEFORE_LOCKOUT} wrong codes lock the second factor for ${describeDuration(TWO_FACTOR_LOCKOUT_MS)} and send a \`security_alert\` \`two_factor_locked\`. On success every other session of the member ends; this one stays.`,
        tags: ["two-factor"],
        operationId: "enableTwoFactor",
        security: security.session,
        body: EnableTwoFactorBody,
        response: {
          200: RecoveryCodesBody,
          ...errorResponses(...SESSION_ERRORS, "invalid_2fa_code", "invalid_credentials", "password_change_required", "rate_limited"),
        },
      },
    },
    async (request) => {
      const session = await requireSession(deps, request);
      return { success: true as const, recoveryCodes: await enableTwoFactor(deps, request.tenant, session, request.body, contextOf(request)) };
    },
  );

  app.post(
    "/auth/2fa/disable",
    {
      schema: {
        summary: "Turn the second factor off",
        description: "Needs the password or a current code (TOTP or recovery code): the session alone is not enough. Without either, 400 `validation_failed`.",
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
        description: "Needs a current code (TOTP or recovery code); the old set stops working.",
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
