/**
 * The operator API (contract.md#d3). Without OPERATOR_API_KEY the whole prefix answers 404, as if absent.
 * Each handler calls the same function the CLI calls.
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { AuthError, type ErrorCode } from "../../errors.js";
import { NewTenantSettingsSchema, PartialTenantSettingsSchema, TenantSettingsSchema } from "../../core/tenant-settings.js";
import {
  createTenant,
  deleteTenant,
  listTenants,
  listWebhookDeliveries,
  rotateApplicationKey,
  rotateWebhookSecret,
  showTenant,
  updateTenantSettings,
} from "../../flows/tenants/tenants.js";
import {
  DELIVERY_PAGE_DEFAULT,
  DELIVERY_PAGE_MAX,
  describeDuration,
  TENANT_CACHE_TTL_MS,
  TENANT_DOMAIN_MAX_LENGTH,
  TENANT_PAGE_DEFAULT,
  TENANT_PAGE_MAX,
  WEBHOOK_SECRET_ROTATION_WINDOW_MS,
} from "../../rules.js";
import { constantTimeEqual } from "../../security/hashing.js";
import { BODY_ERRORS, errorResponses, security } from "../openapi.js";
import { described, LimitQueryField, NoBodyNeeded, Timestamp } from "../schemas.js";
import { bearerToken } from "./admin.js";

const DomainField = Type.String({ minLength: 1, maxLength: TENANT_DOMAIN_MAX_LENGTH });
const ApplicationIdField = Type.String({ minLength: 1, maxLength: 64 });
export const DomainParams = Type.Object({ domain: DomainField });
// Exported, like the schemas below, for test/client-types.test.ts, which proves the SDK's types equal to them.
export const ApplicationParams = Type.Object({ applicationId: ApplicationIdField });
export const CreateTenantBody = Type.Object({ domain: DomainField, applicationId: Type.Optional(ApplicationIdField), settings: NewTenantSettingsSchema });
export const UpdateTenantSettingsBody = Type.Object({ settings: PartialTenantSettingsSchema });
export const DeliveriesQuery = Type.Object({ limit: Type.Optional(LimitQueryField(DELIVERY_PAGE_DEFAULT, DELIVERY_PAGE_MAX, "Deliveries")) });

export const CreatedTenantBody = described(
  Type.Object({
    domain: Type.String(),
    applicationId: Type.String(),
    webhookSecret: Type.String({ description: "Standard Webhooks secret (`whsec_…`). Shown once." }),
    internalApiKey: Type.Optional(Type.String({ description: "The new application's admin key. Shown once; only when a new application was created." })),
  }),
  "The tenant is created.",
);
const ROTATION_WINDOW = describeDuration(WEBHOOK_SECRET_ROTATION_WINDOW_MS);
// decisions.md#webhook-secret-rotation
const ROTATE_WEBHOOK_SECRET_DESCRIPTION =
  `For ${ROTATION_WINDOW} every attempt, retries of earlier events included, carries two signatures in \`webhook-signature\`, ` +
  "`v1,<old secret's> v1,<new secret's>`, so a receiver holding either secret verifies every delivery; after that only the new secret signs. " +
  "Give the receiver the new secret within that time. A rotation during the window keeps only the secret it replaces, with a new window.";
export const RotatedSecretBody = described(
  Type.Object({
    domain: Type.String(),
    webhookSecret: Type.String({ description: "The new Standard Webhooks secret (`whsec_…`). Shown once." }),
    previousSecretExpiresAt: Type.Union([Timestamp, Type.Null()], {
      description: `Until when deliveries are signed with the old secret too (${ROTATION_WINDOW} from the rotation). null when the old secret could not be opened with any configured SECRETS_KEY and was dropped.`,
    }),
  }),
  "The new secret, shown once. The old one is never shown again.",
);
export const TenantBody = described(
  Type.Object({ domain: Type.String(), applicationId: Type.String(), settings: TenantSettingsSchema }),
  "The tenant and its settings; `botProtection.secretKey` is never returned.",
);
export const DeliveriesBody = described(
  Type.Object({
    deliveries: Type.Array(
      Type.Object({
        id: Type.String({ description: "The `webhook-id` of the event." }),
        eventType: Type.String(),
        status: Type.Union([Type.Literal("pending"), Type.Literal("delivered"), Type.Literal("failed")]),
        attempts: Type.Integer(),
        lastError: Type.Union([Type.String(), Type.Null()]),
        nextAttemptAt: Type.Union([Timestamp, Type.Null()]),
        createdAt: Timestamp,
      }),
    ),
  }),
  "Recent deliveries, newest first; never the payload or its link.",
);
export const RotatedKeyBody = described(Type.Object({ applicationId: Type.String(), internalApiKey: Type.String() }), "The new key, shown once.");

export const DeleteTenantQuery = Type.Object({ confirm: Type.String({ minLength: 1, maxLength: TENANT_DOMAIN_MAX_LENGTH, description: "The domain again." }) });
export const TenantListQuery = Type.Object({
  limit: Type.Optional(LimitQueryField(TENANT_PAGE_DEFAULT, TENANT_PAGE_MAX, "Tenants")),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 340, description: "`nextCursor` of the previous page." })),
});
export const TenantListBody = described(
  Type.Object({
    tenants: Type.Array(Type.Object({ domain: Type.String(), applicationId: Type.String(), createdAt: Timestamp })),
    nextCursor: Type.Union([Type.String(), Type.Null()], { description: "Pass as `cursor` for the next page; null on the last page." }),
  }),
  "Tenants in domain order; never a key or secret.",
);
export const DeletedTenantBody = described(
  Type.Object({
    success: Type.Literal(true),
    domain: Type.String(),
    applicationId: Type.String(),
    applicationDeleted: Type.Boolean({
      description: "True when this was the application's last tenant: the application and its internal API key are gone too.",
    }),
  }),
  "The tenant and everything it held are erased.",
);

/** The key is checked before anything else (onRequest); 404 when the operator API is off. */
const OPERATOR_ERRORS: readonly ErrorCode[] = ["not_found", "unauthorized"];

export const operatorRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  const operatorKey = deps.config.operatorApiKey;
  app.addHook("onRequest", async (request) => {
    if (operatorKey === undefined) throw new AuthError("not_found");
    const presented = bearerToken(request.headers.authorization);
    if (presented === undefined || !constantTimeEqual(presented, operatorKey)) throw new AuthError("unauthorized");
  });

  app.post(
    "/operator/tenants",
    {
      schema: {
        summary: "Create a tenant",
        description:
          "Without `applicationId` a new application is created with a new internal API key; with it, the tenant joins that application and shares its key (404 `not_found` when there is no such application). Settings are refused with 400 when a key is unknown.",
        tags: ["operator"],
        operationId: "createTenant",
        security: security.operator,
        body: CreateTenantBody,
        response: { 201: CreatedTenantBody, ...errorResponses(...OPERATOR_ERRORS, ...BODY_ERRORS, "conflict") },
      },
    },
    async (request, reply) => {
      const created = await createTenant(deps, request.body);
      return reply.code(201).send(created);
    },
  );

  app.get(
    "/operator/tenants",
    {
      schema: {
        summary: "List tenants",
        description: "In domain order, cursor-paged.",
        tags: ["operator"],
        operationId: "listTenants",
        security: security.operator,
        querystring: TenantListQuery,
        response: { 200: TenantListBody, ...errorResponses(...OPERATOR_ERRORS, "validation_failed") },
      },
    },
    async (request) => {
      const { limit, cursor } = request.query;
      return listTenants(deps, { cursor, limit });
    },
  );

  app.delete(
    "/operator/tenants/:domain",
    {
      schema: {
        summary: "Delete a tenant and everything it holds",
        description: `\`confirm\` must repeat the domain (400 otherwise, nothing deleted). Erases, in one transaction, the tenant's members, sessions, tokens, webhook deliveries, audit events and counters, and its application with the application's internal API key when no other tenant shares it. Not reversible. Other instances may serve the tenant from their cache for up to ${describeDuration(TENANT_CACHE_TTL_MS)}.`,
        tags: ["operator"],
        operationId: "deleteTenant",
        security: security.operator,
        params: DomainParams,
        querystring: DeleteTenantQuery,
        response: { 200: DeletedTenantBody, ...errorResponses(...OPERATOR_ERRORS, "validation_failed", "unknown_tenant") },
      },
    },
    async (request) => deleteTenant(deps, request.params.domain, request.query.confirm),
  );

  app.get(
    "/operator/tenants/:domain",
    {
      schema: {
        summary: "Show a tenant",
        description: "Its settings as stored, without `botProtection.secretKey`.",
        tags: ["operator"],
        operationId: "showTenant",
        security: security.operator,
        params: DomainParams,
        response: { 200: TenantBody, ...errorResponses(...OPERATOR_ERRORS, "validation_failed", "unknown_tenant") },
      },
    },
    async (request) => showTenant(deps, request.params.domain),
  );

  app.patch(
    "/operator/tenants/:domain",
    {
      schema: {
        summary: "Change a tenant's settings",
        description:
          "Top-level keys are merged; `botProtection` is replaced whole, and the result is validated again. Concurrent updates of different keys both land; 409 `conflict` only if the settings kept changing through five tries.",
        tags: ["operator"],
        operationId: "updateTenantSettings",
        security: security.operator,
        params: DomainParams,
        body: UpdateTenantSettingsBody,
        response: { 200: TenantBody, ...errorResponses(...OPERATOR_ERRORS, ...BODY_ERRORS, "unknown_tenant", "conflict") },
      },
    },
    async (request) => updateTenantSettings(deps, request.params.domain, request.body.settings),
  );

  app.post(
    "/operator/applications/:applicationId/rotate-key",
    {
      schema: {
        summary: "Replace an application's internal API key",
        description: "The old key stops working at once, for every tenant of the application.",
        tags: ["operator"],
        operationId: "rotateApplicationKey",
        security: security.operator,
        params: ApplicationParams,
        body: NoBodyNeeded,
        response: {
          200: RotatedKeyBody,
          ...errorResponses(...OPERATOR_ERRORS, ...BODY_ERRORS),
        },
      },
    },
    async (request) => rotateApplicationKey(deps, request.params.applicationId),
  );

  app.post(
    "/operator/tenants/:domain/rotate-webhook-secret",
    {
      schema: {
        summary: "Replace a tenant's webhook signing secret",
        description: ROTATE_WEBHOOK_SECRET_DESCRIPTION,
        tags: ["operator"],
        operationId: "rotateWebhookSecret",
        security: security.operator,
        params: DomainParams,
        body: NoBodyNeeded,
        response: {
          200: RotatedSecretBody,
          ...errorResponses(...OPERATOR_ERRORS, ...BODY_ERRORS, "unknown_tenant"),
        },
      },
    },
    async (request) => rotateWebhookSecret(deps, request.params.domain),
  );

  app.get(
    "/operator/tenants/:domain/webhook-deliveries",
    {
      schema: {
        summary: "List a tenant's recent webhook deliveries",
        description: "Newest first; never a payload or its link.",
        tags: ["operator"],
        operationId: "listWebhookDeliveries",
        security: security.operator,
        params: DomainParams,
        querystring: DeliveriesQuery,
        response: { 200: DeliveriesBody, ...errorResponses(...OPERATOR_ERRORS, "validation_failed", "unknown_tenant") },
      },
    },
    async (request) => {
      return listWebhookDeliveries(deps, request.params.domain, request.query.limit);
    },
  );
};
