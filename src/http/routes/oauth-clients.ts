/**
 * decisions.md#openid-provider-clients: the tenant admin's OAuth clients (the tenant's key,
 * contract.md#d22 rules, contract.md#d28). A confidential client's secret is in the creation's answer
 * and in no other: the other answers' schemas have no field for it, so the serializer drops it.
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { toTimestamp } from "../../core/schema.js";
import { ClientIdField, NewOauthClientSchema, OAUTH_CLIENT_TYPES, OauthClientChangesSchema } from "../../flows/oidc/client-input.js";
import { createOauthClient, deleteOauthClient, getOauthClient, listOauthClients, updateOauthClient, type OauthClientView } from "../../flows/oidc/clients.js";
import { ADMIN_ERRORS, BODY_ERRORS, errorResponses, security, TENANT_ERRORS } from "../openapi.js";
import { described, StringEnum, Timestamp } from "../schemas.js";
import { contextOf } from "../tenant.js";
import { describeDuration, MAX_TOKEN_LIFETIME_MS } from "../../rules.js";
import { requireAdminKey } from "./admin.js";

const oauthClientFields = {
  clientId: ClientIdField,
  name: Type.String(),
  type: StringEnum(OAUTH_CLIENT_TYPES),
  firstParty: Type.Boolean({ description: "Skips the consent page." }),
  redirectUris: Type.Array(Type.String(), { description: "Matched exactly." }),
  postLogoutRedirectUris: Type.Array(Type.String()),
  createdAt: Timestamp,
  updatedAt: Timestamp,
};
const OauthClientFields = Type.Object(oauthClientFields);
const CreatedOauthClientFields = Type.Object({
  ...oauthClientFields,
  clientSecret: Type.Optional(
    Type.String({
      description: "A confidential client's secret, shown this once: Latch keeps only its SHA-256 and can't show it again. Absent for a public client.",
    }),
  ),
});

export const CreateOauthClientBody = NewOauthClientSchema;
export const UpdateOauthClientBody = OauthClientChangesSchema;
export const OauthClientParams = Type.Object({ clientId: ClientIdField });
export const OauthClientBody = Type.Object({ success: Type.Literal(true), client: OauthClientFields });
export const CreatedOauthClientBody = described(
  Type.Object({ success: Type.Literal(true), client: CreatedOauthClientFields }),
  "The new client, with its secret when it is confidential (the only time it is shown).",
);
export const OauthClientListBody = described(
  Type.Object({ success: Type.Literal(true), clients: Type.Array(OauthClientFields) }),
  "The tenant's OAuth clients, oldest first. Never a secret.",
);
export const DeletedOauthClientBody = described(
  Type.Object({ success: Type.Literal(true), clientId: ClientIdField }),
  "The client is gone, and with it every grant given to it (its codes and tokens).",
);

/** A client as the API (and the CLI, which prints the same object) says it: Latch's times as ISO 8601. */
export function oauthClientAnswer<T extends OauthClientView>(view: T) {
  return { ...view, createdAt: toTimestamp(view.createdAt), updatedAt: toTimestamp(view.updatedAt) };
}

const CALL_ERRORS = [...TENANT_ERRORS, ...ADMIN_ERRORS] as const;
const PATH = "/auth/admin/oauth-clients";

export const oauthClientAdminRoutes: FastifyPluginAsyncTypebox<{ deps: Deps }> = async (app, { deps }) => {
  requireAdminKey(app, deps);

  app.post(
    PATH,
    {
      schema: {
        summary: "Register an OAuth client",
        description: `An application that signs the tenant's members in through its OpenID Provider. A \`confidential\` client gets a secret, in this answer only; a \`public\` one none (it must use PKCE S256). Redirect URIs are matched exactly. 409 \`invalid_state\` when the tenant has its maximum of clients.`,
        tags: ["admin"],
        operationId: "createOauthClient",
        security: security.admin,
        body: CreateOauthClientBody,
        response: { 201: CreatedOauthClientBody, ...errorResponses(...CALL_ERRORS, ...BODY_ERRORS, "invalid_state") },
      },
    },
    async (request, reply) => {
      const created = await createOauthClient(deps, request.tenant, request.body, contextOf(request));
      return reply.code(201).send({ success: true as const, client: oauthClientAnswer(created) });
    },
  );

  app.get(
    PATH,
    {
      schema: {
        summary: "List the OAuth clients",
        description: "Oldest first. Never a secret.",
        tags: ["admin"],
        operationId: "listOauthClients",
        security: security.admin,
        response: { 200: OauthClientListBody, ...errorResponses(...CALL_ERRORS) },
      },
    },
    async (request) => ({ success: true as const, clients: (await listOauthClients(deps, request.tenant)).map(oauthClientAnswer) }),
  );

  app.get(
    `${PATH}/:clientId`,
    {
      schema: {
        summary: "Show an OAuth client",
        description: "Never its secret. 404 `not_found` for an id the tenant has no client by.",
        tags: ["admin"],
        operationId: "getOauthClient",
        security: security.admin,
        params: OauthClientParams,
        response: { 200: described(OauthClientBody, "The client."), ...errorResponses(...CALL_ERRORS, "validation_failed", "not_found") },
      },
    },
    async (request) => ({ success: true as const, client: oauthClientAnswer(await getOauthClient(deps, request.tenant, request.params.clientId)) }),
  );

  app.patch(
    `${PATH}/:clientId`,
    {
      schema: {
        summary: "Change an OAuth client",
        description:
          "Its name, redirect URIs and first-party flag; its type and secret never change (register a new client instead). A list given replaces the stored one. 404 `not_found` for an id the tenant has no client by.",
        tags: ["admin"],
        operationId: "updateOauthClient",
        security: security.admin,
        params: OauthClientParams,
        body: UpdateOauthClientBody,
        response: { 200: described(OauthClientBody, "The client after the change."), ...errorResponses(...CALL_ERRORS, ...BODY_ERRORS, "not_found") },
      },
    },
    async (request) => {
      const view = await updateOauthClient(deps, request.tenant, request.params.clientId, request.body, contextOf(request));
      return { success: true as const, client: oauthClientAnswer(view) };
    },
  );

  app.delete(
    `${PATH}/:clientId`,
    {
      schema: {
        summary: "Remove an OAuth client",
        description: `Removes the client and every grant given to it: its authorization codes and refresh tokens stop working at once (an access token already issued is a JWT and lives out its ${describeDuration(MAX_TOKEN_LIFETIME_MS)} at most). 404 \`not_found\` for an id the tenant has no client by.`,
        tags: ["admin"],
        operationId: "deleteOauthClient",
        security: security.admin,
        params: OauthClientParams,
        response: { 200: DeletedOauthClientBody, ...errorResponses(...CALL_ERRORS, "validation_failed", "not_found") },
      },
    },
    async (request) => ({ success: true as const, ...(await deleteOauthClient(deps, request.tenant, request.params.clientId, contextOf(request))) }),
  );
};
