/**
 * The operator API (D3). Without OPERATOR_API_KEY the whole prefix answers 404, as if absent.
 * Each handler calls the same function the CLI calls.
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import { NewTenantSettingsSchema, PartialTenantSettingsSchema } from "../../flows/tenant-settings.js";
import { createTenant, listWebhookDeliveries, rotateApplicationKey, rotateWebhookSecret, showTenant, updateTenantSettings } from "../../flows/tenants.js";
import { constantTimeEqual } from "../../security/hashing.js";
import { bearerToken } from "./admin.js";

const DomainParams = Type.Object({ domain: Type.String({ minLength: 1, maxLength: 253 }) });

export const operatorRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  const operatorKey = deps.config.operatorApiKey;
  app.addHook("onRequest", async (request) => {
    if (operatorKey === undefined) throw new AuthError("not_found");
    const presented = bearerToken(request.headers.authorization);
    if (presented === undefined || !constantTimeEqual(presented, operatorKey)) throw new AuthError("unauthorized");
  });

  app.post("/operator/tenants", {
    schema: {
      body: Type.Object({
        domain: Type.String({ minLength: 1, maxLength: 253 }),
        applicationId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
        settings: NewTenantSettingsSchema,
      }),
    },
  }, async (request, reply) => {
    const created = await createTenant(deps, request.body);
    return reply.code(201).send(created);
  });

  app.get("/operator/tenants/:domain", { schema: { params: DomainParams } }, async (request) => showTenant(deps, request.params.domain));

  app.patch("/operator/tenants/:domain", {
    schema: { params: DomainParams, body: Type.Object({ settings: PartialTenantSettingsSchema }) },
  }, async (request) => updateTenantSettings(deps, request.params.domain, request.body.settings));

  app.post("/operator/applications/:applicationId/rotate-key", {
    schema: { params: Type.Object({ applicationId: Type.String({ minLength: 1, maxLength: 64 }) }) },
  }, async (request) => rotateApplicationKey(deps, request.params.applicationId));

  app.post("/operator/tenants/:domain/rotate-webhook-secret", { schema: { params: DomainParams } }, async (request) => rotateWebhookSecret(deps, request.params.domain));

  app.get("/operator/tenants/:domain/webhook-deliveries", {
    schema: { params: DomainParams, querystring: Type.Object({ limit: Type.Optional(Type.String({ pattern: "^[0-9]{1,3}$" })) }) },
  }, async (request) => {
    const deliveries = await listWebhookDeliveries(deps, request.params.domain, Number(request.query.limit ?? 50));
    return { deliveries: deliveries.map((d) => ({ ...d, createdAt: new Date(d.createdAt).toISOString(), nextAttemptAt: d.nextAttemptAt === null ? null : new Date(d.nextAttemptAt).toISOString() })) };
  });
};
