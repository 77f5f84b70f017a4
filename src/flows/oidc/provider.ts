/**
 * decisions.md#openid-provider: each tenant's OpenID Provider (contract.md#d28), panva's
 * `oidc-provider` configured once per tenant and kept in a least-recently-used map of at most
 * MAX_CACHED_PROVIDERS. Its only state is Latch's store (OidcAdapter, decisions.md#openid-provider-storage);
 * its clients are the tenant's `oauth_clients`; its keys are the tenant's signing keys
 * (decisions.md#openid-provider-signing-keys). What is HTML (error and logout pages) comes from the
 * caller, so this file knows no page.
 */
import { SingleFlight } from "../../core/single-flight.js";
import { setMostRecent } from "../../core/lru.js";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { JWK } from "jose";
import type { Deps } from "../../deps.js";
import type { Tenant } from "../../model.js";
import { clientSecretMatches } from "../../security/client-secrets.js";
import { sha256Hex } from "../../security/hashing.js";
import { loadOidcProvider, type OidcProvider, type OidcProviderModule } from "../../providers/oidc-provider.js";
import { SIGNING_KEY_RECHECK_MS } from "../../rules.js";
import { isHeldBack, sessionTtlSeconds, type ActiveSession } from "../kernel/sessions.js";
import { issuerOf } from "./issuer.js";
import { adapterFor, findAccount, GRANT_HASH_PREFIX, introspectJwtAccessToken, mayIntrospect, type ProviderModels } from "./provider-models.js";
import { grantBoundTo, signInSilently, type KoaLike } from "./silent-sign-in.js";
import { signingKeySet } from "./signing-keys.js";

/** contract.md#d28: the provider state for 1,000 tenants fits in bounded memory. */
export const MAX_CACHED_PROVIDERS = 1000;
/** How often a cached provider asks the store whether its tenant's current signing keys changed (a rotation): rules.ts. */
export { SIGNING_KEY_RECHECK_MS };
/** contract.md#d28's lifetimes, in seconds. */
export const ACCESS_TOKEN_TTL_S = 600;
export const ID_TOKEN_TTL_S = 600;
export const AUTHORIZATION_CODE_TTL_S = 60;
/** How long a sign-in may take between the authorize request and its return from the login page (2FA, a passkey, an emailed link). */
export const INTERACTION_TTL_S = 30 * 60;
/** Only these two; never HS* (a client secret is stored hashed, and a public key must never be taken for an HMAC key) nor `none`. */
export const TOKEN_ALGS = ["ES256", "RS256"] as const;
export const SCOPES = ["openid", "email", "profile", "offline_access"] as const;

/** The provider's routes, as contract.md#d28 names them. The interaction is Latch's own page. */
export const OIDC_ROUTES = {
  authorization: "/oauth/authorize",
  token: "/oauth/token",
  userinfo: "/oauth/userinfo",
  revocation: "/oauth/revoke",
  introspection: "/oauth/introspect",
  end_session: "/oauth/end-session",
  jwks: "/oauth/jwks",
} as const;
export const DISCOVERY_PATH = "/.well-known/openid-configuration";
export const INTERACTION_PATH = "/oauth/interaction";

export { issuerOf };

/** decisions.md#openid-provider-access-tokens: the one resource (RFC 8707) the tenant's JWT access tokens are for: the issuer's URL. */
export function accessTokenAudience(deps: Pick<Deps, "dev">, tenant: Pick<Tenant, "domain">): string {
  return issuerOf(deps, tenant);
}

/** What the caller's HTTP layer supplies: the pages the library renders, and the end of a Latch session. */
export interface OidcPageHooks {
  /** An error the library shows the browser (a bad redirect_uri, an unknown client): an HTML page. */
  renderError(tenant: Tenant, out: { error: string; error_description?: string }): string;
  /** RP-initiated logout's confirmation page; `form` is the library's hidden form (with its xsrf field) to submit. */
  logoutSource(tenant: Tenant, form: string, clientName: string | undefined): string;
  /** After the logout, when the client named no post_logout_redirect_uri. */
  postLogoutSuccessSource(tenant: Tenant, clientName: string | undefined): string;
}

/**
 * What the route hands the provider with each request (on the raw request): the resolved tenant, and
 * a way to end the Latch session of this browser (RP-initiated logout, decisions.md#openid-provider-logout).
 */
export interface LatchRequestContext {
  tenant: Tenant;
  /** The live Latch session of the request's cookie, read by the login prompt's check. */
  session: ActiveSession | undefined;
  /** The same Latch session read again now (live, its member not locked): a silent sign-in re-checks it at the moment it signs in. */
  findLatchSession(): Promise<ActiveSession | undefined>;
  endLatchSession(): Promise<void>;
}

export type LatchIncomingMessage = IncomingMessage & { latch?: LatchRequestContext; originalUrl?: string };

export interface CachedProvider {
  provider: OidcProvider;
  handle(req: LatchIncomingMessage, res: ServerResponse): void;
  /** The tenant as last seen by a request: lifetimes follow its sessionTier. */
  tenant: Tenant;
  kids: string;
  checkedAt: number;
}

function buildConfiguration(deps: Deps, entry: { tenant: Tenant }, module: OidcProviderModule, jwks: { keys: JWK[] }, hooks: OidcPageHooks) {
  const tenant = entry.tenant;
  const { Check, Prompt, base } = module.interactionPolicy;
  const policy = base();
  // decisions.md#openid-provider-interaction: under prompt=none, signs the Latch session's member in before the login
  // prompt. A prompt of its own, first in the policy: the checks of one prompt start together, the prompts one by one.
  const signedInSilently = new WeakSet<object>();
  policy.add(
    new Prompt(
      { name: "latch_silent_sign_in", requestable: false },
      new Check("latch_session_silent", "the Latch session signs in without a page", async (ctx) => {
        if (await signInSilently(deps, entry.tenant, ctx as unknown as KoaLike)) signedInSilently.add(ctx);
        return Check.NO_NEED_TO_PROMPT;
      }),
    ),
    0,
  );
  // decisions.md#openid-provider-interaction: the Latch session decides every authorization. The
  // provider's own session is reused for a client only while the grant it holds for that client is
  // bound to the request's live Latch session; otherwise the interaction runs (and asks the Latch session). Under prompt=none
  // that is `login_required` (OpenID Connect Core §3.1.2.6): a check added to the prompt gets no error of the prompt's.
  policy.get("login")?.checks.add(
    new Check("latch_session", "the Latch session is required", "login_required", async (ctx) => {
      const koa = ctx as unknown as KoaLike;
      if (koa.oidc?.result?.login || signedInSilently.has(ctx)) return Check.NO_NEED_TO_PROMPT;
      const latch = koa.req.latch?.session;
      const session = koa.oidc?.session;
      const clientId = koa.oidc?.client?.clientId;
      // A held-back session (decisions.md#held-back-sessions) authorizes nothing: the interaction's page says what to do first.
      if (!latch || isHeldBack(latch) || !session?.accountId || session.accountId !== String(latch.memberId) || !clientId) return Check.REQUEST_PROMPT;
      const grantId = session.grantIdFor?.(clientId);
      if (!grantId) return Check.REQUEST_PROMPT;
      return (await grantBoundTo(deps, entry.tenant, grantId, latch.idHash)) ? Check.NO_NEED_TO_PROMPT : Check.REQUEST_PROMPT;
    }),
  );
  const audience = accessTokenAudience(deps, tenant);
  const secure = issuerOf(deps, tenant).startsWith("https:");
  return {
    adapter: adapterFor(deps, entry, module),
    jwks,
    cookies: {
      keys: [deps.secrets.deriveSecret(`oidc-provider-cookies:${tenant.id}`)],
      long: { signed: true, secure, sameSite: "lax" },
      short: { signed: true, secure, sameSite: "lax" },
    },
    routes: OIDC_ROUTES,
    scopes: [...SCOPES],
    claims: { openid: ["sub", "auth_time", "amr"], email: ["email", "email_verified"], profile: ["name"] },
    responseTypes: ["code"],
    clientAuthMethods: ["client_secret_basic", "client_secret_post", "none"],
    // S256 only, always for public clients; a confidential client that sends a challenge is held to it too.
    pkce: { required: (_ctx: unknown, client: { clientAuthMethod: string }) => client.clientAuthMethod === "none" },
    enabledJWA: {
      idTokenSigningAlgValues: [...TOKEN_ALGS],
      userinfoSigningAlgValues: [...TOKEN_ALGS],
      introspectionSigningAlgValues: [...TOKEN_ALGS],
      authorizationSigningAlgValues: [...TOKEN_ALGS],
      requestObjectSigningAlgValues: [...TOKEN_ALGS],
      clientAuthSigningAlgValues: [...TOKEN_ALGS],
    },
    clientDefaults: { id_token_signed_response_alg: "ES256", grant_types: ["authorization_code", "refresh_token"], response_types: ["code"] },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: false },
      dPoP: { enabled: false },
      pushedAuthorizationRequests: { enabled: false },
      registration: { enabled: false },
      deviceFlow: { enabled: false },
      introspection: {
        enabled: true,
        // contract.md#d28: confidential clients only.
        allowedPolicy: (_ctx: unknown, client: { clientAuthMethod: string }) => mayIntrospect(client),
      },
      // A client revokes its own tokens only; another's are left alone, with the 200 RFC 7009 gives every revocation.
      revocation: {
        enabled: true,
        allowedPolicy: (_ctx: unknown, client: { clientId: string }, token: { clientId?: string }) => token.clientId === client.clientId,
      },
      userinfo: { enabled: true },
      jwtUserinfo: { enabled: false },
      rpInitiatedLogout: {
        enabled: true,
        logoutSource: (ctx: KoaLike, form: string) => {
          ctx.type = "html";
          ctx.body = hooks.logoutSource(entry.tenant, form, ctx.oidc?.client?.clientName);
        },
        postLogoutSuccessSource: (ctx: KoaLike) => {
          ctx.type = "html";
          ctx.body = hooks.postLogoutSuccessSource(entry.tenant, ctx.oidc?.client?.clientName);
        },
      },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => audience,
        // The access token of a code or refresh exchange is for the granted resource, so it is a JWT.
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, resource: string) => {
          if (resource !== audience) throw new module.errors.InvalidTarget();
          return { scope: "openid email profile", audience, accessTokenTTL: ACCESS_TOKEN_TTL_S, accessTokenFormat: "jwt", jwt: { sign: { alg: "ES256" } } };
        },
      },
    },
    formats: {
      customizers: {
        // decisions.md#openid-provider-access-tokens: the grant by its hash (not its id), so userinfo checks the grant and its Latch session.
        jwt: (_ctx: unknown, token: { grantId?: string }, jwt: { payload: Record<string, unknown> }) => {
          if (token.grantId)
            jwt.payload.gid = token.grantId.startsWith(GRANT_HASH_PREFIX) ? token.grantId.slice(GRANT_HASH_PREFIX.length) : sha256Hex(token.grantId);
        },
      },
    },
    interactions: { policy, url: (_ctx: unknown, interaction: { uid: string }) => `${INTERACTION_PATH}/${interaction.uid}` },
    findAccount: (_ctx: unknown, sub: string) => findAccount(deps, entry.tenant, sub),
    // decisions.md#openid-provider: offline_access is honoured as if prompt=consent (the route adds it), so the code's scope decides.
    issueRefreshToken: (_ctx: unknown, client: { grantTypeAllowed(type: string): boolean }, code: { scopes: Set<string> }) =>
      client.grantTypeAllowed("refresh_token") && code.scopes.has("offline_access"),
    rotateRefreshToken: true,
    expiresWithSession: () => false,
    renderError: (ctx: KoaLike, out: { error: string; error_description?: string }) => {
      ctx.type = "html";
      ctx.body = hooks.renderError(entry.tenant, out);
    },
    // Browser apps (public clients) may call the token, userinfo and revocation endpoints from their redirect URIs' origins.
    clientBasedCORS: (_ctx: unknown, origin: string, client: { redirectUris?: string[] }) =>
      (client.redirectUris ?? []).some((uri) => {
        try {
          return new URL(uri).origin === origin;
        } catch {
          return false;
        }
      }),
    ttl: {
      AccessToken: ACCESS_TOKEN_TTL_S,
      IdToken: ID_TOKEN_TTL_S,
      AuthorizationCode: AUTHORIZATION_CODE_TTL_S,
      Interaction: INTERACTION_TTL_S,
      // A refresh token, its grant and the provider's session live as long as a Latch session of the tenant's tier.
      RefreshToken: () => sessionTtlSeconds(entry.tenant),
      Grant: () => sessionTtlSeconds(entry.tenant),
      Session: () => sessionTtlSeconds(entry.tenant),
    },
    conformIdTokenClaims: true,
  };
}

function kidsOf(keys: { keys: JWK[] }): string {
  return keys.keys.map((k) => k.kid ?? "").join(",");
}

/**
 * The per-tenant providers of one app. Built on first use; a map in recency order drops the least
 * recently used beyond MAX_CACHED_PROVIDERS. A rotation reaches a cached provider within
 * SIGNING_KEY_RECHECK_MS: it is rebuilt when the tenant's published kids differ (decisions.md#openid-provider).
 */
export class OidcProviders {
  private readonly entries = new Map<string, CachedProvider>();
  private readonly building = new SingleFlight<CachedProvider>();

  constructor(
    private readonly deps: Deps,
    private readonly hooks: OidcPageHooks,
    private readonly max = MAX_CACHED_PROVIDERS,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  async forTenant(tenant: Tenant): Promise<CachedProvider> {
    const now = this.deps.clock.now();
    const cached = this.entries.get(tenant.id);
    if (cached && cached.provider.issuer === issuerOf(this.deps, tenant)) {
      cached.tenant = tenant;
      this.entries.delete(tenant.id);
      this.entries.set(tenant.id, cached);
      if (now - cached.checkedAt < SIGNING_KEY_RECHECK_MS) return cached;
      const kids = (await this.deps.store.signingKeys.listPublishedKeys(tenant.id, now)).map((k) => k.kid).join(",");
      cached.checkedAt = now;
      if (kids === cached.kids) return cached;
    }
    const entry = await this.building.run(tenant.id, () => this.build(tenant));
    setMostRecent(this.entries, tenant.id, entry, this.max);
    return entry;
  }

  private async build(tenant: Tenant): Promise<CachedProvider> {
    const module = await loadOidcProvider();
    // The keys are as of now, not as of the end of the build: the next recheck is counted from here,
    // so a rotation during the build still reaches this provider within SIGNING_KEY_RECHECK_MS.
    const keysReadAt = this.deps.clock.now();
    const jwks = await signingKeySet(this.deps, tenant);
    const kids = kidsOf(jwks);
    const holder = { tenant };
    const provider = new module.Provider(issuerOf(this.deps, tenant), buildConfiguration(this.deps, holder, module, jwks, this.hooks));
    // The route rewrites X-Forwarded-Proto/Host from the resolved tenant (never the client's), so the
    // library writes https://{domain}/… behind the TLS-terminating proxy.
    provider.proxy = true;
    provider.Client.prototype.compareClientSecret = function compareClientSecret(this: { clientSecret?: string }, presented: unknown) {
      return typeof presented === "string" && typeof this.clientSecret === "string" && clientSecretMatches(this.clientSecret, presented);
    };
    provider.use(async (ctx, next) => {
      const koa = ctx as unknown as KoaLike;
      await next();
      // decisions.md#openid-provider-logout: the member confirmed RP-initiated logout of the provider session that is theirs: the
      // Latch session ends too. Without a provider session the library confirms by itself (an auto-submitted form), so a
      // link from anywhere must not end the Latch session then.
      const latch = koa.req.latch;
      const ended = koa.oidc?.route === "end_session_confirm" && Boolean(koa.oidc.params?.logout);
      if (ended && latch?.session && koa.oidc?.session?.accountId === String(latch.session.memberId)) await latch.endLatchSession();
    });
    // decisions.md#openid-provider-access-tokens: the library introspects opaque tokens only, and answers a JWT
    // `unsupported_token_type` after authenticating the client and reading the request. A JWT access token the
    // client asked about is answered here instead, from the library's own parsed parameters and authenticated client.
    const structured = new WeakSet<object>();
    provider.on("introspection.error", (ctx: object, error: { error?: string }) => {
      if (error.error === "unsupported_token_type") structured.add(ctx);
    });
    provider.use(async (ctx, next) => {
      await next();
      const koa = ctx as unknown as KoaLike & { status: number };
      const value = koa.oidc?.params?.token;
      const client = koa.oidc?.client;
      if (koa.oidc?.route !== "introspection" || !structured.has(ctx) || typeof value !== "string" || !client) return;
      koa.body = await introspectJwtAccessToken(this.deps, holder.tenant, provider as unknown as ProviderModels, client, value);
      koa.type = "json";
      koa.status = 200;
    });
    const callback = provider.callback();
    const entry: CachedProvider = {
      provider,
      handle: (req, res) => {
        if (req.latch) holder.tenant = req.latch.tenant;
        callback(req, res);
      },
      tenant,
      kids,
      checkedAt: keysReadAt,
    };
    Object.defineProperty(entry, "tenant", {
      get: () => holder.tenant,
      set: (value: Tenant) => {
        holder.tenant = value;
      },
    });
    return entry;
  }
}

const registries = new WeakMap<Deps, OidcProviders>();

/** One registry per app's Deps (the routes and the interaction pages share it). */
export function oidcProviders(deps: Deps, hooks: OidcPageHooks): OidcProviders {
  let registry = registries.get(deps);
  if (!registry) {
    registry = new OidcProviders(deps, hooks);
    registries.set(deps, registry);
  }
  return registry;
}
