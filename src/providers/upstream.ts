/**
 * The relying-party half of federated sign-in (decisions.md#federated-sign-in) on panva's
 * `openid-client` (OpenID-certified): authorization URL with state, nonce and PKCE S256; the code
 * exchange and the ID token's checks (signature by the issuer's JWKS, `iss`, `aud`, `nonce`, `exp`)
 * are the library's, never ours. GitHub speaks OAuth 2 without ID tokens: its user and emails API
 * give the subject and the verified primary email. Every request goes through the fetch it is given
 * (the outbound guard of contract.md#d9). Discovery is cached for its HTTP lifetime, at most 24 h.
 */
import * as oidc from "openid-client";
import { DAY } from "../core/clock.js";
import type { FlowChecks } from "../security/flow-checks.js";

export type UpstreamKind = "oidc" | "github";

export interface UpstreamSettings {
  /** Changes whenever the connection does (tenant, id and updatedAt): a stale discovery is never reused. */
  cacheKey: string;
  kind: UpstreamKind;
  /** An OIDC issuer; for GitHub, null (github.com) or a GitHub Enterprise Server base URL. */
  issuer: string | null;
  clientId: string;
  clientSecret: string;
  scopes: string[];
  /**
   * `form_post`: the provider POSTs code and state to the redirect URI (Apple, whenever a scope is
   * asked); the form-post route turns that into the GET callback. Absent: the query, RFC 6749's default.
   */
  responseMode?: "form_post";
  /** `post`: the secret in the token request's body (Apple accepts nothing else); absent: HTTP Basic. */
  clientAuth?: "post";
}

/** What the flows get from the provider: the subject, and an email only with the provider's word on it. */
export interface UpstreamIdentity {
  subject: string;
  email: string | null;
  emailVerified: boolean;
  name: string | null;
}

/** Why the provider part failed, for the error page and the log; never the provider's own text. */
export type UpstreamFailure = "provider_unreachable" | "provider_error" | "invalid_response";

export class UpstreamError extends Error {
  constructor(readonly reason: UpstreamFailure) {
    super(reason);
  }
}

export interface UpstreamProvider {
  authorizationUrl(settings: UpstreamSettings, redirectUri: string, checks: FlowChecks): Promise<URL>;
  identityFromCallback(settings: UpstreamSettings, redirectUri: string, callbackUrl: URL, checks: FlowChecks): Promise<UpstreamIdentity>;
}

const MAX_DISCOVERY_MS = DAY;
/** Without Cache-Control a discovery is kept this long: a key rotation at the provider is seen within it. */
const DEFAULT_DISCOVERY_MS = 60 * 60 * 1000;
const MAX_CACHED_CONFIGURATIONS = 1000;
const GITHUB = { web: "https://github.com", api: "https://api.github.com" };

/** The discovery lifetime its answer allows: max-age, at most 24 h; none for no-store or no-cache. */
export function discoveryLifetimeMs(cacheControl: string | null): number {
  if (cacheControl === null) return DEFAULT_DISCOVERY_MS;
  if (/\b(no-store|no-cache)\b/i.test(cacheControl)) return 0;
  const maxAge = /\bmax-age=(\d+)/i.exec(cacheControl);
  return maxAge ? Math.min(Number(maxAge[1]) * 1000, MAX_DISCOVERY_MS) : DEFAULT_DISCOVERY_MS;
}

export class OpenIdUpstream implements UpstreamProvider {
  private readonly configurations = new Map<string, { configuration: oidc.Configuration; expiresAt: number }>();

  constructor(
    private readonly fetch: oidc.CustomFetch,
    private readonly options: { allowInsecureRequests: boolean; timeoutSeconds: number; now: () => number },
  ) {}

  async authorizationUrl(settings: UpstreamSettings, redirectUri: string, checks: FlowChecks): Promise<URL> {
    const configuration = await this.configurationFor(settings);
    const parameters: Record<string, string> = {
      redirect_uri: redirectUri,
      scope: settings.scopes.join(" "),
      state: checks.state,
      code_challenge: await oidc.calculatePKCECodeChallenge(checks.codeVerifier),
      code_challenge_method: "S256",
    };
    if (settings.kind === "oidc") parameters.nonce = checks.nonce;
    if (settings.responseMode) parameters.response_mode = settings.responseMode;
    return oidc.buildAuthorizationUrl(configuration, parameters);
  }

  async identityFromCallback(settings: UpstreamSettings, redirectUri: string, callbackUrl: URL, checks: FlowChecks): Promise<UpstreamIdentity> {
    const configuration = await this.configurationFor(settings);
    // openid-client reads redirect_uri from the current URL; ours is behind a proxy, so it is rebuilt
    // from the tenant's own callback address with only the provider's parameters kept.
    const current = new URL(redirectUri);
    for (const [key, value] of callbackUrl.searchParams) current.searchParams.append(key, value);
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    try {
      tokens = await oidc.authorizationCodeGrant(configuration, current, {
        pkceCodeVerifier: checks.codeVerifier,
        expectedState: checks.state,
        ...(settings.kind === "oidc" ? { expectedNonce: checks.nonce, idTokenExpected: true } : {}),
      });
    } catch (error) {
      throw failureOf(error);
    }
    if (settings.kind === "github") return this.githubIdentity(configuration, settings, tokens.access_token);
    const claims = tokens.claims();
    if (!claims) throw new UpstreamError("invalid_response");
    return {
      subject: claims.sub,
      email: typeof claims.email === "string" ? claims.email : null,
      // Apple sends the string "true": the provider's word all the same, and nothing else counts.
      emailVerified: claims.email_verified === true || claims.email_verified === "true",
      name: typeof claims.name === "string" ? claims.name : null,
    };
  }

  /** GitHub: the numeric user id is the subject; the email is the primary one GitHub says is verified. */
  private async githubIdentity(configuration: oidc.Configuration, settings: UpstreamSettings, accessToken: string): Promise<UpstreamIdentity> {
    const api = settings.issuer === null ? GITHUB.api : `${settings.issuer.replace(/\/$/, "")}/api/v3`;
    const user = (await this.githubJson(configuration, accessToken, `${api}/user`)) as { id?: unknown; name?: unknown };
    const emails = (await this.githubJson(configuration, accessToken, `${api}/user/emails?per_page=100`)) as Array<{
      email?: unknown;
      primary?: unknown;
      verified?: unknown;
    }>;
    if (typeof user.id !== "number" || !Array.isArray(emails)) throw new UpstreamError("invalid_response");
    const primary = emails.find((entry) => entry.primary === true && typeof entry.email === "string");
    return {
      subject: String(user.id),
      email: primary ? (primary.email as string) : null,
      emailVerified: primary?.verified === true,
      name: typeof user.name === "string" ? user.name : null,
    };
  }

  private async githubJson(configuration: oidc.Configuration, accessToken: string, url: string): Promise<unknown> {
    let response: Response;
    try {
      const headers = new Headers({ accept: "application/vnd.github+json" });
      response = await oidc.fetchProtectedResource(configuration, accessToken, new URL(url), "GET", undefined, headers);
    } catch (error) {
      throw failureOf(error);
    }
    if (!response.ok) throw new UpstreamError("provider_error");
    try {
      return await response.json();
    } catch {
      throw new UpstreamError("invalid_response");
    }
  }

  private async configurationFor(settings: UpstreamSettings): Promise<oidc.Configuration> {
    const now = this.options.now();
    const cached = this.configurations.get(settings.cacheKey);
    if (cached && cached.expiresAt > now) return cached.configuration;
    this.configurations.delete(settings.cacheKey);
    const { configuration, lifetimeMs } =
      settings.kind === "github" ? { configuration: this.githubConfiguration(settings), lifetimeMs: DAY } : await this.discover(settings);
    if (lifetimeMs > 0) {
      if (this.configurations.size >= MAX_CACHED_CONFIGURATIONS) this.configurations.delete(this.configurations.keys().next().value!);
      this.configurations.set(settings.cacheKey, { configuration, expiresAt: now + lifetimeMs });
    }
    return configuration;
  }

  private async discover(settings: UpstreamSettings): Promise<{ configuration: oidc.Configuration; lifetimeMs: number }> {
    let cacheControl: string | null = null;
    const recordLifetime: oidc.CustomFetch = async (url, init) => {
      const response = await this.fetch(url, init);
      if (url.includes("/.well-known/")) cacheControl = response.headers.get("cache-control");
      return response;
    };
    try {
      const authentication = settings.clientAuth === "post" ? oidc.ClientSecretPost(settings.clientSecret) : oidc.ClientSecretBasic(settings.clientSecret);
      const configuration = await oidc.discovery(new URL(settings.issuer!), settings.clientId, undefined, authentication, {
        [oidc.customFetch]: recordLifetime,
        timeout: this.options.timeoutSeconds,
        ...(this.options.allowInsecureRequests ? { execute: [oidc.allowInsecureRequests] } : {}),
      });
      this.prepare(configuration);
      // Without this, openid-client trusts an ID token from the token endpoint on TLS alone (OIDC Core
      // 3.1.3.7) and skips its signature; decisions.md#federated-sign-in checks it against the JWKS.
      oidc.enableNonRepudiationChecks(configuration);
      return { configuration, lifetimeMs: discoveryLifetimeMs(cacheControl) };
    } catch (error) {
      throw failureOf(error);
    }
  }

  private githubConfiguration(settings: UpstreamSettings): oidc.Configuration {
    const web = settings.issuer === null ? GITHUB.web : settings.issuer.replace(/\/$/, "");
    const configuration = new oidc.Configuration(
      { issuer: web, authorization_endpoint: `${web}/login/oauth/authorize`, token_endpoint: `${web}/login/oauth/access_token` },
      settings.clientId,
      undefined,
      oidc.ClientSecretPost(settings.clientSecret),
    );
    this.prepare(configuration);
    configuration[oidc.customFetch] = githubTokenErrors(this.fetch);
    return configuration;
  }

  private prepare(configuration: oidc.Configuration): void {
    configuration[oidc.customFetch] = this.fetch;
    configuration.timeout = this.options.timeoutSeconds;
    if (this.options.allowInsecureRequests) oidc.allowInsecureRequests(configuration);
  }
}

/**
 * GitHub refuses a code exchange with status 200 and `{error: "bad_verification_code", …}` (its docs,
 * "Troubleshooting OAuth app access token request errors") where RFC 6749 5.2 says 400. Given to the
 * library as the 400 it means, the refusal is the provider's (`provider_error`), not a malformed answer.
 */
function githubTokenErrors(fetch: oidc.CustomFetch): oidc.CustomFetch {
  return async (url, init) => {
    const response = await fetch(url, init);
    if (response.status !== 200 || new URL(url).pathname !== "/login/oauth/access_token") return response;
    const body = await response.clone().text();
    let error: unknown;
    try {
      error = (JSON.parse(body) as { error?: unknown } | null)?.error;
    } catch {
      return response; // not JSON: the library's own check refuses it
    }
    return typeof error === "string" ? new Response(body, { status: 400, headers: response.headers }) : response;
  };
}

/** A network failure, an error answer, or a response that failed a check; the library's message is not kept. */
function failureOf(error: unknown): UpstreamError {
  if (error instanceof UpstreamError) return error;
  if (error instanceof oidc.ResponseBodyError || error instanceof oidc.AuthorizationResponseError) return new UpstreamError("provider_error");
  // openid-client wraps its own timeout (the `timeout` option) as a ClientError with this code.
  if (error instanceof Error && (error as { code?: unknown }).code === "OAUTH_TIMEOUT") return new UpstreamError("provider_unreachable");
  if (error instanceof TypeError || (error instanceof Error && error.name === "AbortError") || (error instanceof Error && error.name === "TimeoutError"))
    return new UpstreamError("provider_unreachable");
  return new UpstreamError("invalid_response");
}
