/**
 * What each tenant's OpenID Provider (provider.ts) is given for the library's models: its clients,
 * read from `oauth_clients`; the store adapter (OidcAdapter, decisions.md#openid-provider-storage);
 * the tenant's members as accounts; access tokens verified as JWTs rather than looked up, and their
 * introspection (decisions.md#openid-provider-access-tokens).
 */
import { decodeJwt, decodeProtectedHeader, jwtVerify } from "jose";
import type { Deps } from "../../deps.js";
import type { Tenant } from "../../model.js";
import type { OidcProviderModule } from "../../providers/oidc-provider.js";
import { OidcAdapter, type OidcPayload } from "../../store/oidc.js";
import type { OauthClientRecord } from "../../store/oauth-clients.js";
import { isPrivateUseUri } from "./client-input.js";
import { issuerOf } from "./issuer.js";
import { accessTokenAudience, TOKEN_ALGS } from "./provider.js";
import { signingKeyCache } from "./signing-keys.js";

function clientMetadata(record: OauthClientRecord): Record<string, unknown> {
  const confidential = record.type === "confidential";
  return {
    client_id: record.clientId,
    client_name: record.name,
    redirect_uris: record.redirectUris,
    post_logout_redirect_uris: record.postLogoutRedirectUris,
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    // decisions.md#openid-provider-clients: a private-use scheme is a native app's; the library refuses it on a web client.
    application_type: [...record.redirectUris, ...record.postLogoutRedirectUris].some(isPrivateUseUri) ? "native" : "web",
    // client_secret_post is accepted as well: the library takes either form from a client with a secret.
    token_endpoint_auth_method: confidential ? "client_secret_basic" : "none",
    // Only the SHA-256 of the secret, compared by compareClientSecret below; the library never sees a plain secret.
    ...(confidential && record.secretHash ? { client_secret: record.secretHash } : {}),
    id_token_signed_response_alg: "ES256",
  };
}

/**
 * A verified RFC 9068 access token as the library's AccessToken model reads a stored one, without
 * `aud` (the library's userinfo refuses a token with an audience, made for another resource), and
 * with the grant it was issued under named by its hash (GRANT_HASH_PREFIX), so the grant, and with it the
 * live Latch session, is checked on every use.
 */
async function verifiedAccessToken(deps: Deps, tenant: Tenant, jwt: string): Promise<OidcPayload | undefined> {
  if (jwt.split(".").length !== 3) return undefined;
  let kid: string | undefined;
  try {
    kid = decodeProtectedHeader(jwt).kid;
  } catch {
    return undefined;
  }
  // decisions.md#openid-provider-access-tokens: the tenant's cached key set; a kid it lacks reads the store again at once.
  const cache = signingKeyCache(deps);
  let keys = await cache.forTenant(tenant);
  if (typeof kid === "string" && !keys.has(kid)) keys = await cache.forTenant(tenant, { recheck: true });
  try {
    const { payload } = await jwtVerify(jwt, keys.verifyKey, {
      issuer: issuerOf(deps, tenant),
      audience: accessTokenAudience(deps, tenant),
      typ: "at+jwt",
      algorithms: [...TOKEN_ALGS],
      currentDate: new Date(deps.clock.now()),
    });
    const grantHash = payload.gid;
    if (typeof grantHash !== "string" || typeof payload.sub !== "string" || typeof payload.client_id !== "string") return undefined;
    return {
      jti: jwt,
      kind: "AccessToken",
      accountId: payload.sub,
      clientId: payload.client_id,
      grantId: `${GRANT_HASH_PREFIX}${grantHash}`,
      scope: typeof payload.scope === "string" ? payload.scope : undefined,
      iat: payload.iat,
      exp: payload.exp,
    };
  } catch {
    return undefined;
  }
}

/**
 * A grant named by its hash rather than its id: only verifiedAccessToken makes one (from a token this tenant signed), and
 * the grant adapter below looks it up by that hash. No outside string reaches the library as a grant id.
 */
export const GRANT_HASH_PREFIX = "latch-grant-sha256:";

/** The adapter the library instantiates per model: OidcAdapter, with the Client model read from oauth_clients and access tokens verified as JWTs. */
export function adapterFor(deps: Deps, entry: { tenant: Tenant }, module: OidcProviderModule) {
  const tenant = entry.tenant;
  const invalidGrant = (description: string) => new module.errors.InvalidGrant(description);
  const Base = OidcAdapter.forTenant(tenant.id, () => deps.store, deps.clock, invalidGrant);
  return class LatchAdapter extends Base {
    constructor(private readonly modelName: string) {
      super(modelName);
    }

    override async find(id: string): Promise<OidcPayload | undefined> {
      if (this.modelName === "Client") {
        const record = await deps.store.oauthClients.findClient(tenant.id, id);
        return record && clientMetadata(record);
      }
      // A JWT is verified, never looked up; an opaque one (only for a request with no resource scope) is stored as other models.
      if (this.modelName === "AccessToken" && id.includes(".")) return verifiedAccessToken(deps, entry.tenant, id);
      if (this.modelName === "Grant" && id.startsWith(GRANT_HASH_PREFIX)) {
        const row = await deps.store.oauth.findGrant(tenant.id, id.slice(GRANT_HASH_PREFIX.length), deps.clock.now());
        return row && { ...(JSON.parse(row.payload) as OidcPayload), jti: id };
      }
      return super.find(id);
    }

    override async upsert(id: string, payload: OidcPayload, expiresIn?: number): Promise<void> {
      // Clients are the admin API's (read-only here).
      if (this.modelName === "Client") return;
      return super.upsert(id, payload, expiresIn);
    }

    override async destroy(id: string): Promise<void> {
      // A JWT access token is not stored: it lives until it expires (600 s), or until its grant is revoked (then userinfo refuses it).
      if (this.modelName === "Client" || (this.modelName === "AccessToken" && id.includes("."))) return;
      if (this.modelName === "Grant" && id.startsWith(GRANT_HASH_PREFIX)) return deps.store.oauth.revokeGrant(tenant.id, id.slice(GRANT_HASH_PREFIX.length));
      return super.destroy(id);
    }
  };
}

/** contract.md#d28: introspection answers confidential clients only (a public client is told `active: false`). */
export function mayIntrospect(client: { clientAuthMethod: string }): boolean {
  return client.clientAuthMethod !== "none";
}

/** The member behind `sub` in the tenant (another tenant's record id is not found), as the library's findAccount. */
export async function findAccount(deps: Deps, tenant: Tenant, sub: string) {
  if (!/^\d{15,16}$/.test(sub)) return undefined;
  const member = await deps.store.members.findMemberById(tenant.id, Number(sub));
  if (!member) return undefined;
  return {
    accountId: sub,
    claims: () => ({ sub, email: member.email, email_verified: member.emailVerified, ...(member.name ? { name: member.name } : {}) }),
  };
}

/** What the library's models give introspectJwtAccessToken (the part of them it reads). */
interface FoundToken {
  isValid: boolean;
  accountId?: string;
  clientId?: string;
  grantId?: string;
  scope?: string;
  iat?: number;
  exp?: number;
}
interface FoundGrant {
  isExpired: boolean;
  clientId?: string;
  accountId?: string;
}
export interface ProviderModels {
  issuer: string;
  AccessToken: { find(value: string): Promise<FoundToken | undefined> };
  Grant: { find(id: string, options: { ignoreExpiration: boolean }): Promise<FoundGrant | undefined> };
}

/**
 * decisions.md#openid-provider-access-tokens: the RFC 7662 answer for one of the tenant's JWT access tokens, as userinfo
 * judges it: the library's AccessToken model (the adapter verifies the JWT with the tenant's keys), then its grant as
 * the library's userinfo checks it (gone once the Latch session ended, the member was locked or the grant revoked), then
 * the member. `active: false` whenever any of them fails, and for a public client.
 */
export async function introspectJwtAccessToken(
  deps: Deps,
  tenant: Tenant,
  provider: ProviderModels,
  client: { clientAuthMethod: string },
  value: string,
): Promise<Record<string, unknown>> {
  const inactive = { active: false };
  if (!mayIntrospect(client)) return inactive;
  const token = await provider.AccessToken.find(value);
  if (!token?.isValid || !token.grantId || !token.accountId || !token.clientId) return inactive;
  const grant = await provider.Grant.find(token.grantId, { ignoreExpiration: true });
  if (!grant || grant.isExpired || grant.clientId !== token.clientId || grant.accountId !== token.accountId) return inactive;
  if (!(await findAccount(deps, tenant, token.accountId))) return inactive;
  const jti = decodeJwt(value).jti;
  return {
    active: true,
    sub: token.accountId,
    client_id: token.clientId,
    scope: token.scope || undefined,
    token_type: "Bearer",
    iss: provider.issuer,
    aud: accessTokenAudience(deps, tenant),
    iat: token.iat,
    exp: token.exp,
    ...(typeof jti === "string" ? { jti } : {}),
  };
}
