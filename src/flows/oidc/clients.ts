/**
 * decisions.md#openid-provider-clients: a tenant's OAuth clients, by the admin API (the tenant's key)
 * and the CLI. A confidential client's secret is made here, returned once by `createOauthClient`
 * and stored only as its SHA-256: no other answer, log line or audit row holds it.
 */
import { randomToken } from "../../core/random.js";
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import type { AuditEventType, RequestContext, Tenant } from "../../model.js";
import { MAX_OAUTH_CLIENTS_PER_TENANT } from "../../rules.js";
import { generateClientSecret, hashClientSecret } from "../../security/client-secrets.js";
import type { OauthClientChanges, OauthClientRecord } from "../../store/oauth-clients.js";
import { auditAdminChange, changeAudited, deleteAudited } from "../kernel/admin-changes.js";
import {
  assertClientInput,
  checkClientName,
  checkApplicationType,
  checkRedirectUris,
  NewOauthClientSchema,
  OauthClientChangesSchema,
  type NewOauthClientInput,
  type OauthClientChangesInput,
} from "./client-input.js";

/** 128 random bits, base64url (22 characters): public, but not guessable, so ids say nothing of other clients. */
const CLIENT_ID_BYTES = 16;

/** A client as the admin sees it: everything but the secret's hash. */
export type OauthClientView = Omit<OauthClientRecord, "secretHash">;

/** The creation's answer: the view, plus a confidential client's secret, the one time it is ever shown. */
export type CreatedOauthClient = OauthClientView & { clientSecret?: string };

export function oauthClientView(client: OauthClientRecord): OauthClientView {
  const { secretHash: _hash, ...shown } = client;
  return shown;
}

function noSuchClient(): AuthError {
  return new AuthError("not_found", { message: "No such OAuth client for this tenant." });
}

/** The audit row names the client id (public) and no member; never a secret or its hash (decisions.md#openid-provider-clients). */
function clientChange(type: AuditEventType, clientId: string, context: RequestContext | undefined) {
  return { type, details: { clientId }, context, notFound: noSuchClient };
}

export async function createOauthClient(deps: Deps, tenant: Tenant, input: NewOauthClientInput, context?: RequestContext): Promise<CreatedOauthClient> {
  assertClientInput(NewOauthClientSchema, input);
  const now = deps.clock.now();
  const secret = input.type === "confidential" ? generateClientSecret(deps.random) : undefined;
  const client: OauthClientRecord = {
    clientId: randomToken(deps.random, CLIENT_ID_BYTES),
    name: checkClientName(input.name),
    type: input.type,
    firstParty: input.firstParty ?? true,
    redirectUris: checkRedirectUris(input.redirectUris, input.type, "redirectUris"),
    postLogoutRedirectUris: checkRedirectUris(input.postLogoutRedirectUris ?? [], input.type, "postLogoutRedirectUris"),
    secretHash: secret === undefined ? null : hashClientSecret(secret),
    createdAt: now,
    updatedAt: now,
  };
  checkApplicationType(client.redirectUris, client.postLogoutRedirectUris);
  await deps.store.transaction(async (tx) => {
    // The tenant's row is held to the commit (PostgreSQL; SQLite has one writer), so clients made at
    // once can't all count below the cap and all be inserted (decisions.md#openid-provider-clients).
    await tx.tenants.lockTenant(tenant.id);
    if ((await tx.oauthClients.countClients(tenant.id)) >= MAX_OAUTH_CLIENTS_PER_TENANT) {
      throw new AuthError("invalid_state", { message: `A tenant has at most ${MAX_OAUTH_CLIENTS_PER_TENANT} OAuth clients: remove one first.` });
    }
    await tx.oauthClients.insertClient(tenant.id, client);
    await auditAdminChange(tx, tenant, clientChange("oauth_client_created", client.clientId, context), now);
  });
  return { ...oauthClientView(client), ...(secret !== undefined && { clientSecret: secret }) };
}

export async function listOauthClients(deps: Deps, tenant: Tenant): Promise<OauthClientView[]> {
  return (await deps.store.oauthClients.listClients(tenant.id)).map(oauthClientView);
}

export async function getOauthClient(deps: Deps, tenant: Tenant, clientId: string): Promise<OauthClientView> {
  const client = await deps.store.oauthClients.findClient(tenant.id, clientId);
  if (!client) throw noSuchClient();
  return oauthClientView(client);
}

/** Name, redirect URIs and first-party only: the type and the secret stay as they were made. */
export async function updateOauthClient(
  deps: Deps,
  tenant: Tenant,
  clientId: string,
  input: OauthClientChangesInput,
  context?: RequestContext,
): Promise<OauthClientView> {
  assertClientInput(OauthClientChangesSchema, input);
  const updated = await changeAudited(deps, tenant, clientChange("oauth_client_updated", clientId, context), async (tx, now) => {
    const current = await tx.oauthClients.findClient(tenant.id, clientId);
    if (!current) return undefined;
    // The URIs are checked against the stored type: a private-use scheme only for a public client.
    const changes: OauthClientChanges = {
      ...(input.name !== undefined && { name: checkClientName(input.name) }),
      ...(input.redirectUris !== undefined && { redirectUris: checkRedirectUris(input.redirectUris, current.type, "redirectUris") }),
      ...(input.postLogoutRedirectUris !== undefined && {
        postLogoutRedirectUris: checkRedirectUris(input.postLogoutRedirectUris, current.type, "postLogoutRedirectUris"),
      }),
      ...(input.firstParty !== undefined && { firstParty: input.firstParty }),
    };
    checkApplicationType(changes.redirectUris ?? current.redirectUris, changes.postLogoutRedirectUris ?? current.postLogoutRedirectUris);
    if (!(await tx.oauthClients.updateClient(tenant.id, clientId, changes, now))) return undefined;
    return tx.oauthClients.findClient(tenant.id, clientId);
  });
  return oauthClientView(updated);
}

/** decisions.md#openid-provider-clients: every grant given to the client goes with it, and so its codes and tokens. */
export async function deleteOauthClient(deps: Deps, tenant: Tenant, clientId: string, context?: RequestContext): Promise<{ clientId: string }> {
  await deleteAudited(deps, tenant, clientChange("oauth_client_deleted", clientId, context), (tx) => tx.oauthClients.deleteClient(tenant.id, clientId));
  return { clientId };
}
