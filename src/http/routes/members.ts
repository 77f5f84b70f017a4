/**
 * contract.md#d22, contract.md#d30: the tenant admin's calls on one member, or on the list of them (the tenant's key): list
 * and search, read, export, erase, end every session, and turn 2FA off for support.
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { deleteMember, exportMember, getMember, listMembers, resetTwoFactor, revokeMemberSessions } from "../../flows/admin/members.js";
import { MEMBER_PAGE_DEFAULT, MEMBER_PAGE_MAX } from "../../rules.js";
import { ADMIN_ERRORS, BODY_ERRORS, errorResponses, security, TENANT_ERRORS } from "../openapi.js";
import {
  AuditEventTypeField,
  described,
  EMAIL_FIELD_MAX_LENGTH,
  LimitQueryField,
  MemberStatusField,
  NoBodyNeeded,
  memberIdentityFields,
  RecordIdField,
  SessionFields,
  TwoFactorStatusField,
  Timestamp,
} from "../schemas.js";
import { contextOf } from "../tenant.js";
import { ADMIN_CALL_ERRORS, auditEventTypeOf, requireAdminKey } from "./admin.js";

/** contract.md#d22: one member as the admin sees it (contract.md#spec-1 field names). */
const memberFields = {
  ...memberIdentityFields,
  createdAt: Timestamp,
  lastLoginAt: Type.Union([Timestamp, Type.Null()], { description: "The last login of any kind; null before the first." }),
  externalId: Type.Union([Type.String(), Type.Null()], {
    description: "The member's id in the system they were imported from (`externalId` of the import); null for a member who was not imported.",
  }),
};
export const MemberListQuery = Type.Object({
  email: Type.Optional(
    Type.String({ minLength: 1, maxLength: EMAIL_FIELD_MAX_LENGTH + 1, description: "An exact email, or a prefix ending in `*` (`ada@*`)." }),
  ),
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
      Type.Object({
        kind: Type.Union([Type.Literal("country"), Type.Literal("network")]),
        value: Type.String(),
        firstSeenAt: Timestamp,
        lastSeenAt: Timestamp,
      }),
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
        createdAt: Timestamp,
        lastUsedAt: Type.Union([Timestamp, Type.Null()]),
      }),
    ),
  }),
  "Everything held about the member, without any secret, hash or session id (GDPR Art. 15/20).",
);
export const RecordIdBody = Type.Object({ success: Type.Literal(true), recordid: Type.String() });
export const MemberParams = Type.Object({ recordId: RecordIdField });
export const RevokeSessionsBody = Type.Object({ recordId: RecordIdField });

export const TwoFactorResetBody = described(
  Type.Object({ success: Type.Literal(true), recordid: Type.String(), _2fa_status: TwoFactorStatusField }),
  "2FA is off, every session of the member has ended, and the member is told.",
);

export const memberAdminRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  requireAdminKey(app, deps);

  app.get(
    "/auth/admin/members",
    {
      schema: {
        summary: "List and search members",
        description: "Newest first, cursor-paged. `email` matches exactly, or by prefix with a trailing `*`; `status` filters by `authentication_status`.",
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
        description: "The member's fields, with the number of passkeys and of live sessions.",
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
          "Everything held about the member (GDPR Art. 15/20): profile, live sessions (without ids), login history (countries and networks), audit events and passkey names. No password hash, secret, token or session id.",
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
          "GDPR Art. 17. Erases the member and everything keyed to them in one transaction: sessions, links, registrations, 2FA and recovery codes, login history, audit events, lockout, waiting email requests and webhook deliveries. Keeps one audit row `member_deleted` (no email) and sends `member.deleted` to the tenant's `eventsWebhook`.",
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
        description: "Writes the audit event `sessions_revoked`.",
        tags: ["admin"],
        operationId: "revokeMemberSessions",
        security: security.admin,
        body: RevokeSessionsBody,
        response: { 200: described(RecordIdBody, "Every session of the member has ended."), ...errorResponses(...ADMIN_CALL_ERRORS, ...BODY_ERRORS) },
      },
    },
    async (request) => ({ success: true as const, ...(await revokeMemberSessions(deps, request.tenant, request.body.recordId, contextOf(request))) }),
  );

  app.post(
    "/auth/admin/members/:recordId/reset-2fa",
    {
      schema: {
        summary: "Turn a member's second factor off, for support",
        description:
          'For a member who lost their authenticator, or whose account someone enrolled their own in: 2FA goes off (secret and recovery codes erased), every session of the member ends, and the member gets a `security_alert` `two_factor_disabled` with its "this wasn\'t me" link. Writes the audit event `two_factor_disabled` (`by: admin`). 409 `invalid_state` when 2FA is off.',
        tags: ["admin"],
        operationId: "resetMemberTwoFactor",
        security: security.admin,
        params: MemberParams,
        body: NoBodyNeeded,
        response: { 200: TwoFactorResetBody, ...errorResponses(...ADMIN_CALL_ERRORS, "validation_failed", "invalid_state") },
      },
    },
    async (request) => ({ success: true as const, ...(await resetTwoFactor(deps, request.tenant, request.params.recordId, contextOf(request))) }),
  );
};
