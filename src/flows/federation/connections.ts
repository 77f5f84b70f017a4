/**
 * decisions.md#federated-connections: the tenant admin's connections to upstream identity providers,
 * by the admin API (the tenant's key) and the CLI. The client secret is sealed under SECRETS_KEY as
 * it comes in and never leaves again: no answer, log line or audit row holds it.
 */
import { MAX_CONNECTIONS_PER_TENANT } from "../../rules.js";
import type { Deps, TransactionDeps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import type { AuditEventType, RequestContext, Tenant } from "../../model.js";
import type { Connection, ConnectionChanges } from "../../store/connections.js";
import { auditAdminChange, changeAudited, deleteAudited } from "../kernel/admin-changes.js";
import {
  assertMatches,
  checkDisplayName,
  ConnectionChangesSchema,
  NewConnectionSchema,
  normalizeEmailDomains,
  resolveIssuer,
  resolveScopes,
  type ConnectionChangesInput,
  type NewConnectionInput,
} from "./connection-input.js";

/** A connection as the admin sees it: everything but the secret, plus the callback URL to register at the provider. */
export interface ConnectionView {
  id: string;
  type: Connection["type"];
  displayName: string;
  issuer: string | null;
  clientId: string;
  scopes: string[];
  allowSignup: boolean;
  emailDomains: string[] | null;
  redirectUri: string;
  createdAt: number;
  updatedAt: number;
}

/**
 * Where the provider sends the browser back: built from the stored tenant domain, never from a request
 * header (contract.md#d2); only dev mode's own tenant points at this process, as its links do.
 */
export function connectionRedirectUri(deps: Pick<Deps, "dev">, tenant: Tenant, connectionId: string): string {
  const base = deps.dev?.linkBaseFor(tenant.domain) ?? `https://${tenant.domain}`;
  return `${base}/auth/federated/${encodeURIComponent(connectionId)}/callback`;
}

export function connectionView(deps: Pick<Deps, "dev">, tenant: Tenant, c: Connection): ConnectionView {
  const { clientSecretSealed: _secret, ...shown } = c;
  return { ...shown, redirectUri: connectionRedirectUri(deps, tenant, c.id) };
}

function noSuchConnection(): AuthError {
  return new AuthError("not_found", { message: "No such connection for this tenant." });
}

/** The audit row names the connection only (never its secret or client id) and no member. */
function connectionChange(type: AuditEventType, id: string, context: RequestContext | undefined) {
  return { type, details: { connection: id }, context, notFound: noSuchConnection };
}

export async function createConnection(deps: Deps, tenant: Tenant, input: NewConnectionInput, context?: RequestContext): Promise<ConnectionView> {
  assertMatches(NewConnectionSchema, input, "connection");
  const allowHttp = deps.config.webhookAllowPrivateNetworks;
  const connection = {
    id: input.id,
    type: input.type,
    displayName: checkDisplayName(input.displayName),
    issuer: resolveIssuer(input.type, input.issuer, allowHttp),
    clientId: input.clientId,
    clientSecretSealed: deps.secrets.seal(input.clientSecret),
    scopes: resolveScopes(input.type, input.scopes),
    allowSignup: input.allowSignup ?? true,
    emailDomains: normalizeEmailDomains(input.emailDomains),
  };
  const now = deps.clock.now();
  const created = await deps.store.transaction(async (tx) => {
    // A bound on what one tenant's admin can make Latch fetch and cache (decisions.md#federated-connections).
    if ((await tx.connections.listConnections(tenant.id)).length >= MAX_CONNECTIONS_PER_TENANT) {
      throw new AuthError("invalid_state", { message: `A tenant has at most ${MAX_CONNECTIONS_PER_TENANT} connections: remove one first.` });
    }
    if (!(await tx.connections.insertConnection(tenant.id, connection, now))) return undefined;
    await auditAdminChange(tx, tenant, connectionChange("connection_created", connection.id, context), now);
    return tx.connections.findConnection(tenant.id, connection.id);
  });
  if (!created) throw new AuthError("conflict", { message: "This tenant already has a connection with this id." });
  return connectionView(deps, tenant, created);
}

export async function listConnections(deps: Deps, tenant: Tenant): Promise<ConnectionView[]> {
  const connections = await deps.store.connections.listConnections(tenant.id);
  return connections.map((c) => connectionView(deps, tenant, c));
}

/**
 * The stored columns a change writes. A new `type` brings its own preset issuer and default scopes
 * unless the change names them; `issuer: null` goes back to the type's preset (github.com for `github`,
 * refused for `oidc`).
 */
function changesFor(deps: TransactionDeps, current: Connection, input: ConnectionChangesInput): ConnectionChanges {
  const type = input.type ?? current.type;
  const typeChanged = type !== current.type;
  const changes: ConnectionChanges = { type };
  if (input.displayName !== undefined) changes.displayName = checkDisplayName(input.displayName);
  if (input.issuer !== undefined || typeChanged) {
    // An unchanged issuer of a preset type that was the old preset follows the type; one given explicitly stays.
    // A GitHub Enterprise Server's URL is no OpenID issuer: a github connection turned oidc must name one.
    const kept = type === "oidc" && current.type !== "github" ? (current.issuer ?? undefined) : undefined;
    const given = input.issuer === undefined ? kept : (input.issuer ?? undefined);
    changes.issuer = resolveIssuer(type, given, deps.config.webhookAllowPrivateNetworks);
  }
  if (input.clientId !== undefined) changes.clientId = input.clientId;
  if (input.clientSecret !== undefined) changes.clientSecretSealed = deps.secrets.seal(input.clientSecret);
  if (input.scopes !== undefined || typeChanged) changes.scopes = resolveScopes(type, input.scopes);
  if (input.allowSignup !== undefined) changes.allowSignup = input.allowSignup;
  if (input.emailDomains !== undefined) changes.emailDomains = normalizeEmailDomains(input.emailDomains);
  return changes;
}

export async function updateConnection(
  deps: Deps,
  tenant: Tenant,
  id: string,
  input: ConnectionChangesInput,
  context?: RequestContext,
): Promise<ConnectionView> {
  assertMatches(ConnectionChangesSchema, input, "change");
  const updated = await changeAudited(deps, tenant, connectionChange("connection_updated", id, context), async (tx, now) => {
    const current = await tx.connections.findConnection(tenant.id, id);
    if (!current) return undefined;
    const changes = changesFor(deps, current, input);
    // A subject is unique only at its issuer: after a change of issuer or type, a linked `sub` would
    // name whoever has it at the new provider. The links go, in the same transaction (decisions.md#federated-connections).
    if (changes.type !== current.type || (changes.issuer !== undefined && changes.issuer !== current.issuer)) {
      await tx.federation.deleteConnectionRows(tenant.id, id);
    }
    return tx.connections.updateConnection(tenant.id, id, changes, now);
  });
  return connectionView(deps, tenant, updated);
}

/** decisions.md#federated-connections: its identities go with it; their members stay, with their other ways to log in. */
export async function deleteConnection(deps: Deps, tenant: Tenant, id: string, context?: RequestContext): Promise<{ id: string }> {
  await deleteAudited(deps, tenant, connectionChange("connection_deleted", id, context), (tx) => tx.connections.deleteConnection(tenant.id, id));
  return { id };
}
