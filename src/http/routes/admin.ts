import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import type { AuditEventType } from "../../model.js";
import { authenticateAdmin, listAuditEvents, lockAccount, requirePasswordChange, resendVerificationAsAdmin } from "../../flows/admin/admin.js";
import { toTimestamp } from "../../core/schema.js";
import { ADMIN_ERRORS, BODY_ERRORS, errorResponses, security, TENANT_ERRORS } from "../openapi.js";
import { AuditEventTypeField, described, EmailField, LimitQueryField, MemberStatusEnumField, MessageBody, RecordIdField, Timestamp } from "../schemas.js";
import { contextOf } from "../tenant.js";
import { describeDuration, rateRules } from "../../rules.js";

export const StatusBody = Type.Object({ success: Type.Literal(true), recordid: Type.String(), authentication_status: MemberStatusEnumField });
export const AuditLogBody = described(
  Type.Object({
    success: Type.Literal(true),
    recordid: Type.String(),
    events: Type.Array(
      Type.Object({
        id: Type.Integer(),
        type: AuditEventTypeField,
        at: Timestamp,
        ip: Type.Union([Type.String(), Type.Null()]),
        userAgent: Type.Union([Type.String(), Type.Null()]),
        details: Type.Optional(Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]))),
      }),
    ),
  }),
  "The member's audit events, newest first.",
);
export const LockAccountBody = Type.Object({
  recordId: RecordIdField,
  action: Type.Union([Type.Literal("lock"), Type.Literal("unlock")]),
  email: Type.Optional(EmailField),
});
export const AdminResendVerificationBody = Type.Object({ recordId: RecordIdField, email: EmailField });
export const RequirePasswordChangeBody = Type.Object({ recordId: RecordIdField });
export const AuditLogQuery = Type.Object({ recordId: RecordIdField, limit: Type.Optional(LimitQueryField(50, 200, "Events")) });
/** The key is checked before the body is read (onRequest), and the member must belong to the tenant. */
export const ADMIN_CALL_ERRORS = [...TENANT_ERRORS, ...ADMIN_ERRORS, "not_found"] as const;

/**
 * A stored audit row's `type` as the document's enum and the SDK's union say it: the store reads it
 * back as `string`, but rows are only written from model.ts AUDIT_EVENT_TYPES (store AuditEvent),
 * and that list only grows, since dropping a type would break the enum clients were promised.
 */
export function auditEventTypeOf(type: string): AuditEventType {
  return type as AuditEventType;
}

/** `Authorization: Bearer <key>`; the scheme's name is case-insensitive (RFC 9110 section 11.1, contract.md#d30). */
export function bearerToken(header: string | undefined): string | undefined {
  const match = header?.match(/^Bearer +([\x21-\x7e]{1,512})$/i);
  return match?.[1];
}

/** Every admin route is authenticated before the body is read, so a caller without a key learns nothing from validation. */
export function requireAdminKey(app: FastifyInstance, deps: Deps): void {
  app.addHook("onRequest", async (request) => {
    await authenticateAdmin(deps, request.tenant, bearerToken(request.headers.authorization));
  });
}

export const adminRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  requireAdminKey(app, deps);

  app.post(
    "/auth/lock-account",
    {
      schema: {
        summary: "Lock or unlock a member",
        description:
          "`lock` ends every session and voids the member's outstanding links; `unlock` sets `Unlocked`, or `Email Verification Pending` when the email was never verified, and lifts a password lockout. `email`, when given, must be the member's.",
        tags: ["admin"],
        operationId: "lockAccount",
        security: security.admin,
        body: LockAccountBody,
        response: { 200: described(StatusBody, "The member's status after the call."), ...errorResponses(...ADMIN_CALL_ERRORS, ...BODY_ERRORS) },
      },
    },
    async (request) => {
      const result = await lockAccount(deps, request.tenant, request.body, contextOf(request));
      return { success: true as const, ...result };
    },
  );

  app.post(
    "/auth/admin/resend-verification-email",
    {
      schema: {
        summary: "Send the verification email again, as admin",
        description: `Only for an account in \`Email Verification Pending\` (else 409 \`invalid_state\`); one request per email every ${describeDuration(rateRules.adminResendPerEmail.windowMs)}. \`email\` must be the member's.`,
        tags: ["admin"],
        operationId: "resendVerificationAsAdmin",
        security: security.admin,
        body: AdminResendVerificationBody,
        response: {
          200: described(MessageBody, "The email is on its way."),
          ...errorResponses(...ADMIN_CALL_ERRORS, ...BODY_ERRORS, "invalid_state", "rate_limited"),
        },
      },
    },
    async (request) => {
      const message = await resendVerificationAsAdmin(deps, request.tenant, request.body, contextOf(request));
      return { success: true as const, message };
    },
  );

  app.post(
    "/auth/admin/require-password-change",
    {
      schema: {
        summary: "Require a password change",
        description:
          "Sets `Password Change Pending` and ends every session. Password login then answers 403 `password_change_required`; a magic link still works, and change-password or reset-password clears it. Only for `Unlocked` or already pending accounts (else 409 `invalid_state`).",
        tags: ["admin"],
        operationId: "requirePasswordChange",
        security: security.admin,
        body: RequirePasswordChangeBody,
        response: {
          200: described(StatusBody, "The member's status after the call."),
          ...errorResponses(...ADMIN_CALL_ERRORS, ...BODY_ERRORS, "invalid_state"),
        },
      },
    },
    async (request) => {
      const result = await requirePasswordChange(deps, request.tenant, request.body, contextOf(request));
      return { success: true as const, ...result };
    },
  );

  app.get(
    "/auth/admin/audit-log",
    {
      schema: {
        summary: "Read a member's audit log",
        description: "Newest first.",
        tags: ["admin"],
        operationId: "listAuditEvents",
        security: security.admin,
        querystring: AuditLogQuery,
        response: { 200: AuditLogBody, ...errorResponses(...ADMIN_CALL_ERRORS, "validation_failed") },
      },
    },
    async (request) => {
      const events = await listAuditEvents(deps, request.tenant, request.query.recordId, request.query.limit ?? 50);
      return {
        success: true as const,
        recordid: request.query.recordId,
        events: events.map((e) => ({
          id: e.id,
          type: auditEventTypeOf(e.type),
          at: toTimestamp(e.at),
          ip: e.ip,
          userAgent: e.userAgent,
          details: e.details,
        })),
      };
    },
  );
};
