/**
 * decisions.md#federated-connections: the tenant admin's connections to upstream identity providers
 * (the tenant's key, contract.md#d22 rules). No answer ever holds the client secret.
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { toTimestamp } from "../../core/schema.js";
import { ConnectionChangesSchema, ConnectionIdField, CONNECTION_TYPES, NewConnectionSchema } from "../../flows/federation/connection-input.js";
import { createConnection, deleteConnection, listConnections, updateConnection, type ConnectionView } from "../../flows/federation/connections.js";
import { ADMIN_ERRORS, BODY_ERRORS, errorResponses, security, TENANT_ERRORS } from "../openapi.js";
import { described, StringEnum, Timestamp } from "../schemas.js";
import { contextOf } from "../tenant.js";
import { requireAdminKey } from "./admin.js";

const ConnectionFields = Type.Object({
  id: ConnectionIdField,
  type: StringEnum(CONNECTION_TYPES),
  displayName: Type.String(),
  issuer: Type.Union([Type.String(), Type.Null()], {
    description: "The OpenID issuer (a preset's filled in); for `github`, a GitHub Enterprise Server's base URL, or null for github.com.",
  }),
  clientId: Type.String(),
  scopes: Type.Array(Type.String()),
  allowSignup: Type.Boolean(),
  emailDomains: Type.Union([Type.Array(Type.String()), Type.Null()], { description: "Lowercase; null: any domain." }),
  redirectUri: Type.String({
    description: "The callback URL to register at the provider: `https://{tenant domain}/auth/federated/{id}/callback`.",
  }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const CreateConnectionBody = NewConnectionSchema;
export const UpdateConnectionBody = ConnectionChangesSchema;
export const ConnectionParams = Type.Object({ id: ConnectionIdField });
export const ConnectionBody = Type.Object({ success: Type.Literal(true), connection: ConnectionFields });
export const ConnectionListBody = described(
  Type.Object({ success: Type.Literal(true), connections: Type.Array(ConnectionFields) }),
  "The tenant's connections, oldest first. Never a client secret.",
);
export const DeletedConnectionBody = described(
  Type.Object({ success: Type.Literal(true), id: ConnectionIdField }),
  "The connection is gone, and with it every member's link to it.",
);

/** A connection as the API (and the CLI, which prints the same object) says it: Latch's times as ISO 8601. */
export function connectionAnswer(view: ConnectionView) {
  return { ...view, createdAt: toTimestamp(view.createdAt), updatedAt: toTimestamp(view.updatedAt) };
}

const CALL_ERRORS = [...TENANT_ERRORS, ...ADMIN_ERRORS] as const;

export const connectionAdminRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  requireAdminKey(app, deps);

  app.post(
    "/auth/admin/connections",
    {
      schema: {
        summary: "Add a connection to an identity provider",
        description:
          "`google`, `microsoft`, `apple` and `gitlab` fill in their issuer (an explicit `issuer` overrides it); `oidc` needs `issuer`; `github` takes a GitHub Enterprise Server's base URL, none for github.com. The client secret is sealed at rest and never returned. Register the answer's `redirectUri` at the provider. 409 `conflict` when the tenant has a connection with this id.",
        tags: ["admin"],
        operationId: "createConnection",
        security: security.admin,
        body: CreateConnectionBody,
        response: { 201: described(ConnectionBody, "The new connection (without its secret)."), ...errorResponses(...CALL_ERRORS, ...BODY_ERRORS, "conflict") },
      },
    },
    async (request, reply) => {
      const view = await createConnection(deps, request.tenant, request.body, contextOf(request));
      return reply.code(201).send({ success: true as const, connection: connectionAnswer(view) });
    },
  );

  app.get(
    "/auth/admin/connections",
    {
      schema: {
        summary: "List the connections",
        description: "Oldest first. Never a client secret.",
        tags: ["admin"],
        operationId: "listConnections",
        security: security.admin,
        response: { 200: ConnectionListBody, ...errorResponses(...CALL_ERRORS) },
      },
    },
    async (request) => ({ success: true as const, connections: (await listConnections(deps, request.tenant)).map(connectionAnswer) }),
  );

  app.patch(
    "/auth/admin/connections/:id",
    {
      schema: {
        summary: "Change a connection",
        description:
          "Any field but `id`; `clientSecret` replaces the stored secret. A new `type` brings its preset issuer and default scopes unless they are given; `issuer: null` goes back to the preset's. 404 `not_found` for an id the tenant has no connection by.",
        tags: ["admin"],
        operationId: "updateConnection",
        security: security.admin,
        params: ConnectionParams,
        body: UpdateConnectionBody,
        response: { 200: described(ConnectionBody, "The connection after the change."), ...errorResponses(...CALL_ERRORS, ...BODY_ERRORS, "not_found") },
      },
    },
    async (request) => {
      const view = await updateConnection(deps, request.tenant, request.params.id, request.body, contextOf(request));
      return { success: true as const, connection: connectionAnswer(view) };
    },
  );

  app.delete(
    "/auth/admin/connections/:id",
    {
      schema: {
        summary: "Remove a connection",
        description:
          "Removes the connection and every member's link to it (their accounts stay, with their other ways to log in), and any sign-in through it still in flight. 404 `not_found` for an id the tenant has no connection by.",
        tags: ["admin"],
        operationId: "deleteConnection",
        security: security.admin,
        params: ConnectionParams,
        response: { 200: DeletedConnectionBody, ...errorResponses(...CALL_ERRORS, "validation_failed", "not_found") },
      },
    },
    async (request) => ({ success: true as const, ...(await deleteConnection(deps, request.tenant, request.params.id, contextOf(request))) }),
  );
};
