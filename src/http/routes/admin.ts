import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import type { AuditEventType } from "../../model.js";
import { authenticateAdmin, listAuditEvents, lockAccount, requirePasswordChange, resendVerificationAsAdmin } from "../../flows/admin.js";
import { deleteMember, exportMember, getMember, listMembers, MEMBER_PAGE_DEFAULT, MEMBER_PAGE_MAX, revokeMemberSessions } from "../../flows/member-admin.js";
import { ADMIN_ERRORS, BODY_ERRORS, errorResponses, security, TENANT_ERRORS } from "../openapi.js";
import {
  AuditEventTypeField,
  described,
  EmailField,
  LimitQueryField,
  MemberStatusField,
  MemberStatusEnumField,
  memberIdentityFields,
  MessageBody,
  RecordIdField,
  SessionFields,
  Timestamp,
} from "../schemas.js";
import { contextOf } from "../tenant.js";

export const StatusBody = Type.Object({ success: Type.Literal(true), recordid: Type.String(), authentication_status: MemberStatusEnumField });
export const AuditLogBody = described(
  Type.Object({
    success: Type.Literal(true),
    recordid: Type.String(),
    events: Type.Array(
      Type.Object({
        id: Type.Integer(),
        type: AuditEventTypeField,
        at: Type.String({ description: "ISO 8601 time." }),
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
/** D22: one member as the admin sees it (spec section 1 field names). */
const memberFields = {
  ...memberIdentityFields,
  createdAt: Timestamp,
  lastLoginAt: Type.Union([Timestamp, Type.Null()], { description: "The last login of any kind; null before the first." }),
};
export const MemberListQuery = Type.Object({
  email: Type.Optional(Type.String({ minLength: 1, maxLength: 321, description: "An exact email, or a prefix ending in `*` (`ada@*`)." })),
  status: Type.Optional(MemberStatusField),
  limit: Type.Optional(LimitQueryField(MEMBER_PAGE_DEFAULT, MEMBER_PAGE_MAX, "Members")),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: "`nextCursor` of the previous page." })),
});
export const MemberListBody = described(
  Type.Object({
    success: Type.Literal(true),
    members: Type.Array(Type.Object(memberFields)),
    nextCursor: Type.Union([Type.String(), Type.Null()], { description: "Pass as `cursor` for the next page; null on the last page." }),
  }),
  "Members of the tenant, newest first.",
);
export const MemberBody = described(
  Type.Object({
    success: Type.Literal(true),
    ...memberFields,
    passkeys: Type.Integer({ minimum: 0 }),
    sessions: Type.Integer({ minimum: 0, description: "Live sessions." }),
  }),
  "The member.",
);
export const MemberExportBody = described(
  Type.Object({
    success: Type.Literal(true),
    member: Type.Object({ ...memberFields, emailVerified: Type.Boolean(), hasPassword: Type.Boolean() }),
    sessions: Type.Array(Type.Object(SessionFields)),
    loginHistory: Type.Array(
      Type.Object({ kind: Type.Union([Type.Literal("country"), Type.Literal("network")]), value: Type.String(), firstSeen: Timestamp, lastSeen: Timestamp }),
    ),
    auditEvents: Type.Array(
      Type.Object({
        type: AuditEventTypeField,
        at: Timestamp,
        ip: Type.Union([Type.String(), Type.Null()]),
        userAgent: Type.Union([Type.String(), Type.Null()]),
        details: Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()])),
      }),
    ),
    passkeys: Type.Array(
      Type.Object({
        name: Type.String(),
        createdAt: Type.String({ format: "date-time" }),
        lastUsedAt: Type.Union([Type.String({ format: "date-time" }), Type.Null()]),
      }),
    ),
  }),
  "Everything held about the member, without any secret, hash or session id (GDPR Art. 15/20).",
);
export const RecordIdBody = Type.Object({ success: Type.Literal(true), recordid: Type.String() });
export const MemberParams = Type.Object({ recordId: RecordIdField });
export const RevokeSessionsBody = Type.Object({ recordId: RecordIdField });

/** The key is checked before the body is read (onRequest), and the member must belong to the tenant. */
const ADMIN_CALL_ERRORS = [...TENANT_ERRORS, ...ADMIN_ERRORS, "not_found"] as const;

/**
 * A stored audit row's `type` as the document's enum and the SDK's union say it: the store reads it
 * back as `string`, but rows are only written from model.ts AUDIT_EVENT_TYPES (store AuditEvent),
 * and that list only grows, since dropping a type would break the enum clients were promised.
 */
function auditEventTypeOf(type: string): AuditEventType {
  return type as AuditEventType;
}

/** `Authorization: Bearer <key>`; the scheme's name is case-insensitive (RFC 9110 section 11.1, D30). */
export function bearerToken(header: string | undefined): string | undefined {
  const match = header?.match(/^Bearer +([\x21-\x7e]{1,512})$/i);
  return match?.[1];
}

export const adminRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  // Authenticated before the body is read, so a caller without a key learns nothing from validation.
  app.addHook("onRequest", async (request) => {
    await authenticateAdmin(deps, request.tenant, bearerToken(request.headers.authorization));
  });

  app.post(
    "/auth/lock-account",
    {
      schema: {
        summary: "Lock or unlock a member",
        description:
          "Spec 4.5, D15. `lock` ends every session and voids the member's outstanding links; `unlock` sets `Unlocked`, or `Email Verification Pending` when the email was never verified, and lifts a password lockout. `email`, when given, must be the member's.",
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
        description:
          "Spec 4.5. Only for an account in `Email Verification Pending` (else 409 `invalid_state`); one request per email every 5 minutes. `email` must be the member's.",
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
          "D15. Sets `Password Change Pending` and ends every session. Password login then answers 403 `password_change_required`; a magic link still works, and change-password or reset-password clears it. Only for `Unlocked` or already pending accounts (else 409 `invalid_state`).",
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
        description: "D15. Newest first.",
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
          at: new Date(e.at).toISOString(),
          ip: e.ip,
          userAgent: e.userAgent,
          details: e.details,
        })),
      };
    },
  );

  app.get(
    "/auth/admin/members",
    {
      schema: {
        summary: "List and search members",
        description: "D22. Newest first, cursor-paged. `email` matches exactly, or by prefix with a trailing `*`; `status` filters by `authentication_status`.",
        tags: ["admin"],
        operationId: "listMembers",
        security: security.admin,
        querystring: MemberListQuery,
        response: { 200: MemberListBody, ...errorResponses(...TENANT_ERRORS, ...ADMIN_ERRORS, "validation_failed") },
      },
    },
    async (request) => {
      const { email, status, limit, cursor } = request.query;
      const page = await listMembers(deps, request.tenant, { email, status, cursor, limit });
      return { success: true as const, ...page };
    },
  );

  app.get(
    "/auth/admin/members/:recordId",
    {
      schema: {
        summary: "Read one member",
        description: "D22. The member's fields, with the number of passkeys and of live sessions.",
        tags: ["admin"],
        operationId: "getMember",
        security: security.admin,
        params: MemberParams,
        response: { 200: MemberBody, ...errorResponses(...ADMIN_CALL_ERRORS, "validation_failed") },
      },
    },
    async (request) => ({ success: true as const, ...(await getMember(deps, request.tenant, request.params.recordId)) }),
  );

  app.get(
    "/auth/admin/members/:recordId/export",
    {
      schema: {
        summary: "Export everything held about a member",
        description:
          "D22 (GDPR Art. 15/20): profile, live sessions (without ids), login history (countries and networks), audit events and passkey names. No password hash, secret, token or session id.",
        tags: ["admin"],
        operationId: "exportMember",
        security: security.admin,
        params: MemberParams,
        response: { 200: MemberExportBody, ...errorResponses(...ADMIN_CALL_ERRORS, "validation_failed") },
      },
    },
    async (request) => {
      const { auditEvents, ...rest } = await exportMember(deps, request.tenant, request.params.recordId);
      return { success: true as const, ...rest, auditEvents: auditEvents.map((e) => ({ ...e, type: auditEventTypeOf(e.type) })) };
    },
  );

  app.delete(
    "/auth/admin/members/:recordId",
    {
      schema: {
        summary: "Erase a member",
        description:
          "D22 (GDPR Art. 17). Erases the member and everything keyed to them in one transaction: sessions, links, registrations, 2FA and recovery codes, login history, audit events, lockout, waiting email requests and webhook deliveries. Keeps one audit row `member_deleted` (no email) and sends `member.deleted` to the tenant's `eventsWebhook` (D25).",
        tags: ["admin"],
        operationId: "deleteMember",
        security: security.admin,
        params: MemberParams,
        response: { 200: described(RecordIdBody, "The member is erased."), ...errorResponses(...ADMIN_CALL_ERRORS, "validation_failed") },
      },
    },
    async (request) => ({ success: true as const, ...(await deleteMember(deps, request.tenant, request.params.recordId, contextOf(request))) }),
  );

  app.post(
    "/auth/admin/revoke-sessions",
    {
      schema: {
        summary: "End every session of a member",
        description: "D22. Writes the audit event `sessions_revoked`.",
        tags: ["admin"],
        operationId: "revokeMemberSessions",
        security: security.admin,
        body: RevokeSessionsBody,
        response: { 200: described(RecordIdBody, "Every session of the member has ended."), ...errorResponses(...ADMIN_CALL_ERRORS, ...BODY_ERRORS) },
      },
    },
    async (request) => ({ success: true as const, ...(await revokeMemberSessions(deps, request.tenant, request.body.recordId, contextOf(request))) }),
  );
};
