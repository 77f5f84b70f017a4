/**
 * decisions.md#openid-provider-interaction: how a tenant's OpenID Provider (provider.ts) reads the Latch
 * session. The library's request as far as the login prompt's checks read it, the binding of a grant to
 * a Latch session, and `prompt=none` signed in from a live Latch session without a page.
 */
import type { Deps } from "../../deps.js";
import type { Tenant } from "../../model.js";
import type { OidcProvider } from "../../providers/oidc-provider.js";
import { sha256Hex } from "../../security/hashing.js";
import { isHeldBack } from "../kernel/sessions.js";
import { approveSilentSignIn } from "./interaction.js";
import { findAccount } from "./provider-models.js";
import type { LatchIncomingMessage } from "./provider.js";

export interface KoaLike {
  req: LatchIncomingMessage;
  type: string;
  body: unknown;
  oidc?: {
    route?: string;
    params?: Record<string, unknown>;
    client?: { clientName?: string; clientId: string; clientAuthMethod: string };
    session?: ProviderSession;
    result?: { login?: unknown };
    prompts?: Set<string>;
    requestParamClaims?: Set<string>;
    requestParamOIDCScopes?: Set<string>;
    /** The grant the library loaded for the request (the provider session's for this client, or a new empty one). */
    grant?: { getOIDCScopeFiltered(filter: Set<string>): string };
    provider?: { Grant: OidcProvider["Grant"] & { find(id: string): Promise<object | undefined> } };
    entity?(name: "Account" | "Grant", value: object): void;
  };
}

/** The library's session model (its `_session` cookie), as far as the login-prompt checks read and sign it in. */
interface ProviderSession {
  accountId?: string;
  /** True while nothing of it was stored yet. */
  new?: boolean;
  grantIdFor?(clientId: string, grantId?: string): string | undefined;
  ensureClientContainer(clientId: string): void;
  loginAccount(login: { accountId: string; loginTs?: number; amr?: string[]; transient: boolean }): void;
  resetIdentifier(): void;
}

/** Whether the grant is bound to this Latch session (decisions.md#openid-provider-interaction). */
export async function grantBoundTo(deps: Deps, tenant: Tenant, grantId: string, sessionIdHash: string): Promise<boolean> {
  return (await deps.store.oauth.grantSessionHash(tenant.id, sha256Hex(grantId))) === sessionIdHash;
}

/** Whether the grant the library loaded for the request holds every OpenID scope it asks, read with the library's own filter. */
function grantHoldsScopes(oidc: NonNullable<KoaLike["oidc"]>): boolean {
  const asked = oidc.requestParamOIDCScopes ?? new Set<string>();
  const held = new Set(oidc.grant?.getOIDCScopeFiltered(asked).split(" "));
  return [...asked].every((scope) => held.has(scope));
}

/**
 * decisions.md#openid-provider-interaction: an authorization request with `prompt=none` from a browser whose live Latch
 * session the provider's session does not yet carry for this client is signed in here, as the interaction would, without a
 * page: the provider's session gets the Latch session's login, and the request the account and the grant the library's
 * own middleware would have loaded (the first-party client's new grant, bound to the session; for a third-party client an
 * empty one, so the consent prompt answers `consent_required`). False when nothing was signed in: the login prompt then
 * answers `login_required`. Never a Latch session made, never a page shown.
 */
export async function signInSilently(deps: Deps, tenant: Tenant, koa: KoaLike): Promise<boolean> {
  const oidc = koa.oidc;
  const latch = koa.req.latch;
  const session = oidc?.session;
  const clientId = oidc?.client?.clientId;
  if (oidc?.route !== "authorization" || !oidc.prompts?.has("none") || !latch?.session || isHeldBack(latch.session)) return false;
  if (!session || !clientId || !oidc.provider || !oidc.entity) return false;
  const accountId = String(latch.session.memberId);
  // Another member's provider session: taking it over needs the interaction's account switch (a page), so login_required.
  if (session.accountId && session.accountId !== accountId) return false;
  // Already carried (a grant bound to this Latch session, of every scope asked): the prompts let it through as without
  // prompt=none. A grant short of a scope is a first-party client's new grant below, as its interaction would make one.
  const held = session.grantIdFor?.(clientId);
  if (session.accountId && held && grantHoldsScopes(oidc) && (await grantBoundTo(deps, tenant, held, latch.session.idHash))) return false;
  // The session read again now: it may have ended, or its member been locked, since the route read it.
  const active = await latch.findLatchSession();
  const account = active?.idHash === latch.session.idHash ? await findAccount(deps, tenant, accountId) : undefined;
  if (!active || !account) return false;
  const request = { clientId, scope: oidc.params?.scope as string | undefined, claims: [...(oidc.requestParamClaims ?? [])], maxAge: oidc.params?.max_age };
  const approved = await approveSilentSignIn(deps, tenant, oidc.provider, request, active);
  if (!approved) return false;
  // Found through the adapter, which answers a grant only while its Latch session lives (decisions.md#openid-provider-storage).
  const grant = approved.grantId ? await oidc.provider.Grant.find(approved.grantId) : new oidc.provider.Grant({ accountId, clientId });
  if (!grant) return false;
  // As the library's own resume after a login: a new id for a stored session, so a cookie known before the login is worth nothing after.
  if (!session.new) session.resetIdentifier();
  session.loginAccount({ accountId, loginTs: approved.login.ts, amr: approved.login.amr, transient: false });
  if (approved.grantId) {
    session.ensureClientContainer(clientId);
    session.grantIdFor?.(clientId, approved.grantId);
  }
  oidc.entity("Account", account);
  oidc.entity("Grant", grant);
  return true;
}
