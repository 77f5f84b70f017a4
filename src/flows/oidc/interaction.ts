/**
 * decisions.md#openid-provider-interaction: what the provider's interaction decides, given the live
 * Latch session. The login is the Latch session's (its member, its amr, its sign-in time); the
 * consent is a new Grant of what was asked, bound to that Latch session (store.oauth.bindGrant), so
 * ending the session revokes every token issued under it (decisions.md#openid-provider-storage).
 */
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import type { Tenant } from "../../model.js";
import type { InteractionDetails, InteractionResult, OidcProvider } from "../../providers/oidc-provider.js";
import { sha256Hex } from "../../security/hashing.js";
import type { OauthClientRecord } from "../../store/oauth-clients.js";
import { isHeldBack, type ActiveSession } from "../kernel/sessions.js";
import { accessTokenAudience, INTERACTION_TTL_S, SCOPES } from "./provider.js";

export interface ConsentRequest {
  client: Pick<OauthClientRecord, "clientId" | "name" | "firstParty">;
  /** The scopes asked for, in SCOPES' order, each once. */
  scopes: string[];
}

/** The client of an interaction and what it asks for; a client deleted meanwhile is refused. */
export async function consentRequestOf(deps: Deps, tenant: Tenant, details: InteractionDetails): Promise<ConsentRequest> {
  const client = await deps.store.oauthClients.findClient(tenant.id, details.params.client_id);
  if (!client) throw new AuthError("not_found", { message: "This application is no longer registered." });
  const asked = new Set(`${details.params.scope ?? ""} ${(details.prompt.details.missingOIDCScope ?? []).join(" ")}`.split(" "));
  return { client, scopes: SCOPES.filter((scope) => asked.has(scope)) };
}

/** The store's row that remembers when an interaction first asked for a new sign-in (keyed by its uid's hash, gone with its expiry). */
const REAUTHENTICATION_MODEL = "LatchReauthentication";

function isTooOld(deps: Deps, createdAt: number, maxAge: unknown): boolean {
  const seconds = typeof maxAge === "string" ? Number(maxAge) : typeof maxAge === "number" ? maxAge : NaN;
  return Number.isInteger(seconds) && seconds >= 0 && deps.clock.now() - createdAt > seconds * 1000;
}

/**
 * decisions.md#openid-provider-interaction: whether the member must sign in (again) before this interaction goes on.
 * `prompt=login` asks for a new sign-in, and `max_age` for one no older than it (OpenID Connect Core §3.1.2.1), so a
 * session opened before the interaction first sent the member to sign in does not do, however young; one opened
 * after it does, however small `max_age` is (`max_age=0` would otherwise send the member back to the login page
 * for ever). That moment is kept in the store on the first visit, so going back with the old session does not reset it.
 */
export async function mustSignInAgain(deps: Deps, tenant: Tenant, details: InteractionDetails, session: Pick<ActiveSession, "createdAt">): Promise<boolean> {
  const prompt = details.params.prompt;
  const promptsLogin = typeof prompt === "string" && prompt.split(" ").includes("login");
  if (!promptsLogin && !isTooOld(deps, session.createdAt, details.params.max_age)) return false;
  const now = deps.clock.now();
  const idHash = sha256Hex(`${details.uid}`);
  const row = await deps.store.oauth.findArtifact(tenant.id, REAUTHENTICATION_MODEL, "id_hash", idHash, now);
  if (row) return session.createdAt < (JSON.parse(row.payload) as { since: number }).since;
  await deps.store.oauth.upsertArtifact(tenant.id, {
    model: REAUTHENTICATION_MODEL,
    idHash,
    grantHash: null,
    uid: null,
    userCodeHash: null,
    expiresAt: now + INTERACTION_TTL_S * 1000,
    payload: JSON.stringify({ since: now }),
  });
  return true;
}

/** The login of a Latch session, as the provider keeps it: its member, its `amr`, its sign-in time (seconds). */
function loginOf(session: Pick<ActiveSession, "memberId" | "amr" | "createdAt">): NonNullable<InteractionResult["login"]> {
  return {
    accountId: String(session.memberId),
    amr: session.amr.length > 0 ? [...session.amr] : undefined,
    ts: Math.floor(session.createdAt / 1000),
    remember: true,
  };
}

/**
 * A new Grant to the client of `scopes` (and `claims`), bound to this Latch session; undefined (and no grant) when the
 * session ended between reading it and now, as there is nothing to bind to.
 */
async function grantBoundToSession(
  deps: Deps,
  tenant: Tenant,
  provider: Pick<OidcProvider, "Grant">,
  clientId: string,
  consented: { scopes: string[]; claims?: string[] },
  session: Pick<ActiveSession, "memberId" | "idHash">,
): Promise<string | undefined> {
  const grant = new provider.Grant({ accountId: String(session.memberId), clientId });
  if (consented.scopes.length > 0) grant.addOIDCScope(consented.scopes.join(" "));
  if (consented.claims && consented.claims.length > 0) grant.addOIDCClaims(consented.claims);
  // The access token's resource (decisions.md#openid-provider-access-tokens) gets the same scopes, so one visit grants both:
  // the login prompt, usually first, names no missing resource scopes.
  const resourceScopes = consented.scopes.filter((scope) => scope !== "offline_access");
  if (resourceScopes.length > 0) grant.addResourceScope(accessTokenAudience(deps, tenant), resourceScopes.join(" "));
  const grantId = await grant.save();
  if (await deps.store.oauth.bindGrant(tenant.id, sha256Hex(grantId), session.idHash, session.memberId)) return grantId;
  await deps.store.oauth.revokeGrant(tenant.id, sha256Hex(grantId));
  return undefined;
}

/** The member consented (or the client is first-party): a grant of what was asked, bound to this Latch session, and the login. */
export async function approveInteraction(
  deps: Deps,
  tenant: Tenant,
  provider: OidcProvider,
  details: InteractionDetails,
  request: ConsentRequest,
  session: ActiveSession,
): Promise<InteractionResult> {
  const consented = { scopes: request.scopes, claims: details.prompt.details.missingOIDCClaims };
  const grantId = await grantBoundToSession(deps, tenant, provider, request.client.clientId, consented, session);
  if (!grantId) throw new AuthError("unauthorized");
  return { login: loginOf(session), consent: { grantId } };
}

/** What a silent authorization request (`prompt=none`) asks for, as the library parsed it. */
export interface SilentRequest {
  clientId: string;
  /** The scope parameter after the library's checks (it drops `offline_access` under `prompt=none`). */
  scope: string | undefined;
  claims: string[];
  maxAge: unknown;
}

/**
 * decisions.md#openid-provider-interaction: `prompt=none` answered from the live Latch session without a page. The
 * login is the session's, as after the interaction; a first-party client's standing consent is a new Grant of what it
 * asked, bound to the session (`grantId`); a third-party client gets none here, so the library answers
 * `consent_required` unless the provider's session already holds its consent. Undefined when there is no login to
 * give (a session older than `max_age`, a client gone, a session ended meanwhile): the library answers `login_required`.
 */
export async function approveSilentSignIn(
  deps: Deps,
  tenant: Tenant,
  provider: Pick<OidcProvider, "Grant">,
  request: SilentRequest,
  session: ActiveSession,
): Promise<{ login: NonNullable<InteractionResult["login"]>; grantId?: string } | undefined> {
  // prompt=login can't come with none (the library refuses it); max_age is held against the session's age, as mustSignInAgain does.
  if (isTooOld(deps, session.createdAt, request.maxAge) || isHeldBack(session)) return undefined;
  const client = await deps.store.oauthClients.findClient(tenant.id, request.clientId);
  if (!client) return undefined;
  if (!client.firstParty) return { login: loginOf(session) };
  const asked = new Set((request.scope ?? "").split(" "));
  const consented = { scopes: SCOPES.filter((scope) => asked.has(scope)), claims: request.claims };
  const grantId = await grantBoundToSession(deps, tenant, provider, client.clientId, consented, session);
  return grantId ? { login: loginOf(session), grantId } : undefined;
}

export function denyInteraction(): InteractionResult {
  return { error: "access_denied", error_description: "The member did not allow the application." };
}
