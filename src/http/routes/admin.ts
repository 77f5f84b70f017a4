import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { authenticateAdmin, listAuditEvents, lockAccount, requirePasswordChange, resendVerificationAsAdmin } from "../../flows/admin.js";
import { EmailField, MessageBody, RecordIdField } from "../schemas.js";
import { contextOf } from "../tenant.js";

const StatusBody = Type.Object({ success: Type.Literal(true), recordid: Type.String(), authentication_status: Type.String() });

export function bearerToken(header: string | undefined): string | undefined {
  const match = header?.match(/^Bearer ([\x21-\x7e]{1,512})$/);
  return match?.[1];
}

export const adminRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  // Authenticated before the body is read, so a caller without a key learns nothing from validation.
  app.addHook("onRequest", async (request) => {
    await authenticateAdmin(deps, request.tenant, bearerToken(request.headers.authorization));
  });

  app.post("/auth/lock-account", {
    schema: {
      body: Type.Object({ recordId: RecordIdField, action: Type.Union([Type.Literal("lock"), Type.Literal("unlock")]), email: Type.Optional(EmailField) }),
      response: { 200: StatusBody },
    },
  }, async (request) => {
    const result = await lockAccount(deps, request.tenant, request.body, contextOf(request));
    return { success: true as const, ...result };
  });

  app.post("/auth/admin/resend-verification-email", {
    schema: { body: Type.Object({ recordId: RecordIdField, email: EmailField }), response: { 200: MessageBody } },
  }, async (request) => {
    const message = await resendVerificationAsAdmin(deps, request.tenant, request.body, contextOf(request));
    return { success: true as const, message };
  });

  app.post("/auth/admin/require-password-change", {
    schema: { body: Type.Object({ recordId: RecordIdField }), response: { 200: StatusBody } },
  }, async (request) => {
    const result = await requirePasswordChange(deps, request.tenant, request.body, contextOf(request));
    return { success: true as const, ...result };
  });

  app.get("/auth/admin/audit-log", {
    schema: { querystring: Type.Object({ recordId: RecordIdField, limit: Type.Optional(Type.String({ pattern: "^[0-9]{1,3}$" })) }) },
  }, async (request) => {
    const events = await listAuditEvents(deps, request.tenant, request.query.recordId, Number(request.query.limit ?? 50));
    return {
      success: true as const,
      recordid: request.query.recordId,
      events: events.map((e) => ({ id: e.id, type: e.type, at: new Date(e.at).toISOString(), ip: e.ip, userAgent: e.userAgent, details: e.details })),
    };
  });
};
