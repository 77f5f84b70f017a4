/**
 * A local server that speaks GitHub's OAuth app protocol and the two REST endpoints Latch reads, laid
 * out as a GitHub Enterprise Server is (web at the root, API under `/api/v3`), so a `github` connection
 * whose issuer is this server's URL talks to it exactly as to GitHub (contract.md#d27). Shapes follow
 * GitHub's docs ("Authorizing OAuth apps", "Troubleshooting OAuth app access token request errors",
 * "REST API endpoints for emails"): the token endpoint answers JSON only for `Accept: application/json`
 * (else a form), and its errors with status 200 and `{error, error_description, error_uri}`; the API
 * takes `Authorization: Bearer …` or `token …`; `/user/emails` needs the `user:email` (or `user`) scope.
 * Stricter than GitHub in one way: an authorization without `state` or PKCE S256 is refused, because
 * Latch must always send both. There is no page: `signIn` plays the person pressing "Authorize".
 */
import { createHash, randomBytes } from "node:crypto";
import type { ServerResponse } from "node:http";
import { startLocalServer, type LocalServer, type RecordedRequest } from "./local-servers.js";

export interface GitHubEmail {
  email: string;
  primary: boolean;
  verified: boolean;
  /** GitHub's: `public` or `private` for the primary email, null for the others. */
  visibility?: "public" | "private" | null;
}

/** Who presses "Authorize": GitHub's numeric id, login, display name and email addresses. */
export interface GitHubUser {
  id: number;
  login: string;
  name?: string | null;
  emails: GitHubEmail[];
}

export interface GitHubServerOptions {
  /** The OAuth app's callback URL: Latch's `redirectUri` for the connection. */
  redirectUri: string;
  clientId?: string;
  clientSecret?: string;
}

export interface GitHubServer {
  /** http://127.0.0.1:<port>: the connection's issuer (a GitHub Enterprise Server's base URL). */
  url: string;
  client: { client_id: string; client_secret: string; redirect_uri: string };
  /** Every request so far, with headers and bodies (the test's own look at the wire). */
  requests: RecordedRequest[];
  /** Every access token handed out, to look for in Latch's logs. */
  accessTokens: string[];
  /** Calls of the token endpoint so far. */
  tokenCalls: number;
  /**
   * The person opens `authorizationUrl` (GitHub checks it and would show its "Authorize" page) and
   * approves as `user`: the redirect to the callback with `code` and `state`. Throws on the page's refusal.
   */
  signIn(authorizationUrl: string | URL, user: GitHubUser): Promise<URL>;
  /** The person presses "Cancel": GitHub's redirect with `error=access_denied` and the state. */
  deny(authorizationUrl: string | URL): Promise<URL>;
  close(): Promise<void>;
}

interface Grant {
  user: GitHubUser;
  redirectUri: string;
  codeChallenge: string;
  scopes: string[];
  expiresAt: number;
}

/** GitHub's authorization codes expire after 10 minutes and work once. */
const CODE_LIFETIME_MS = 10 * 60 * 1000;
const DOCS = "https://docs.github.com/rest";
/** The JSON errors of the token endpoint, as GitHub words them. */
const TOKEN_ERRORS = {
  incorrect_client_credentials: "The client_id and/or client_secret passed are incorrect.",
  redirect_uri_mismatch: "The redirect_uri MUST match the registered callback URL for this application.",
  bad_verification_code: "The code passed is incorrect or expired.",
  unsupported_grant_type: "The grant type is not supported.",
} as const;

function json(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { "content-type": "application/json; charset=utf-8", ...headers }).end(JSON.stringify(body));
}

function s256(verifier: string): string {
  return createHash("sha256").update(verifier).digest("base64url");
}

/** The public part of a GitHub user, as `GET /user` answers it for the token's owner. */
function userJson(user: GitHubUser, base: string) {
  const primary = user.emails.find((e) => e.primary);
  return {
    login: user.login,
    id: user.id,
    node_id: `U_${Buffer.from(String(user.id)).toString("base64url")}`,
    avatar_url: `${base}/avatars/u/${user.id}`,
    html_url: `${base}/${user.login}`,
    type: "User",
    site_admin: false,
    name: user.name ?? null,
    company: null,
    blog: "",
    location: null,
    // GitHub shows only a public primary email here; /user/emails lists them all.
    email: primary?.visibility === "public" ? primary.email : null,
    created_at: "2020-01-01T00:00:00Z",
  };
}

export async function startGitHubServer(options: GitHubServerOptions): Promise<GitHubServer> {
  const client = {
    client_id: options.clientId ?? "Iv1.0123456789abcdef",
    client_secret: options.clientSecret ?? "gh-client-secret-0123456789abcdef0123456789",
    redirect_uri: options.redirectUri,
  };
  const grants = new Map<string, Grant>();
  const tokens = new Map<string, { user: GitHubUser; scopes: string[] }>();

  /** What GitHub's authorize page refuses, or null when it would show "Authorize". */
  const authorizationProblem = (query: URLSearchParams): string | null => {
    if (query.get("client_id") !== client.client_id) return "404: no OAuth app with this client_id";
    const redirectUri = query.get("redirect_uri");
    if (redirectUri !== null && redirectUri !== client.redirect_uri) return "redirect_uri_mismatch";
    if (query.get("response_type") !== null && query.get("response_type") !== "code") return "unsupported response_type";
    const challenge = query.get("code_challenge");
    if (challenge !== null && query.get("code_challenge_method") !== "S256") return "code_challenge_method must be S256 (GitHub has no plain)";
    if (challenge !== null && !/^[A-Za-z0-9_-]{43}$/.test(challenge)) return "malformed code_challenge";
    if (!query.get("state")) return "no state (GitHub allows it; Latch must send one)";
    if (challenge === null) return "no PKCE (GitHub allows it; Latch must send it)";
    return null;
  };

  const authorize = (request: RecordedRequest, response: ServerResponse) => {
    const problem = authorizationProblem(new URL(request.path, "http://x").searchParams);
    if (problem === null) response.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end("<h1>Authorize</h1>");
    else response.writeHead(problem.startsWith("404") ? 404 : 400, { "content-type": "text/plain" }).end(problem);
  };

  /** The token endpoint: errors with status 200, in JSON or as a form by the Accept header, as GitHub does. */
  const accessToken = (request: RecordedRequest, response: ServerResponse) => {
    upstream.tokenCalls++;
    const wantsJson = /application\/json/i.test(String(request.headers.accept ?? ""));
    const answer = (body: Record<string, string>) => {
      if (wantsJson) json(response, 200, body);
      else response.writeHead(200, { "content-type": "application/x-www-form-urlencoded; charset=utf-8" }).end(new URLSearchParams(body).toString());
    };
    const refuse = (error: keyof typeof TOKEN_ERRORS) =>
      answer({ error, error_description: TOKEN_ERRORS[error], error_uri: `https://docs.github.com/apps/troubleshooting#${error.replaceAll("_", "-")}` });
    const isJsonBody = /application\/json/i.test(String(request.headers["content-type"] ?? ""));
    const form = isJsonBody ? new URLSearchParams(JSON.parse(request.body) as Record<string, string>) : new URLSearchParams(request.body);
    if (form.get("client_id") !== client.client_id || form.get("client_secret") !== client.client_secret) return refuse("incorrect_client_credentials");
    const grantType = form.get("grant_type");
    if (grantType !== null && grantType !== "authorization_code") return refuse("unsupported_grant_type");
    const code = form.get("code") ?? "";
    const grant = grants.get(code);
    grants.delete(code); // once, whatever follows
    if (!grant || grant.expiresAt < Date.now()) return refuse("bad_verification_code");
    const redirectUri = form.get("redirect_uri");
    if (redirectUri !== null && redirectUri !== grant.redirectUri) return refuse("redirect_uri_mismatch");
    // GitHub's docs don't name the error for a wrong verifier; the code is refused all the same.
    const verifier = form.get("code_verifier");
    if (verifier === null || s256(verifier) !== grant.codeChallenge) return refuse("bad_verification_code");
    const token = `gho_${randomBytes(18).toString("hex")}`;
    tokens.set(token, { user: grant.user, scopes: grant.scopes });
    upstream.accessTokens.push(token);
    answer({ access_token: token, token_type: "bearer", scope: grant.scopes.join(",") });
  };

  const api = (request: RecordedRequest, response: ServerResponse, path: string) => {
    const credentials = /^(?:bearer|token)\s+(\S+)$/i.exec(String(request.headers.authorization ?? ""))?.[1];
    if (credentials === undefined) return json(response, 401, { message: "Requires authentication", documentation_url: DOCS, status: "401" });
    const owner = tokens.get(credentials);
    if (!owner) return json(response, 401, { message: "Bad credentials", documentation_url: DOCS, status: "401" });
    const headers = { "x-oauth-scopes": owner.scopes.join(", "), "x-github-media-type": "github.v3; format=json" };
    if (path === "/api/v3/user") return json(response, 200, userJson(owner.user, upstream.url), { ...headers, "x-accepted-oauth-scopes": "" });
    if (path === "/api/v3/user/emails") {
      if (!owner.scopes.includes("user:email") && !owner.scopes.includes("user"))
        return json(response, 404, { message: "Not Found", documentation_url: DOCS, status: "404" }, headers);
      const emails = owner.user.emails.map((e) => ({
        email: e.email,
        primary: e.primary,
        verified: e.verified,
        visibility: e.visibility ?? (e.primary ? "private" : null),
      }));
      return json(response, 200, emails, { ...headers, "x-accepted-oauth-scopes": "user, user:email" });
    }
    json(response, 404, { message: "Not Found", documentation_url: DOCS, status: "404" });
  };

  const server: LocalServer = await startLocalServer((request, response) => {
    const path = new URL(request.path, "http://x").pathname;
    if (request.method === "GET" && path === "/login/oauth/authorize") return authorize(request, response);
    if (request.method === "POST" && path === "/login/oauth/access_token") return accessToken(request, response);
    if (request.method === "GET" && path.startsWith("/api/v3/")) return api(request, response, path);
    response.writeHead(404, { "content-type": "text/plain" }).end("Not Found");
  });

  /** The browser's visit to the authorize page; the query it carried once GitHub accepted it. */
  const openAuthorizePage = async (authorizationUrl: string | URL): Promise<URLSearchParams> => {
    const url = new URL(authorizationUrl);
    if (url.origin !== upstream.url || url.pathname !== "/login/oauth/authorize") throw new Error(`not this server's authorize page: ${url.href}`);
    const page = await fetch(url, { redirect: "manual" });
    const text = await page.text();
    if (page.status !== 200) throw new Error(`GitHub refused the authorization (${page.status}): ${text}`);
    return url.searchParams;
  };

  const back = (query: URLSearchParams, parameters: Record<string, string>): URL => {
    const target = new URL(query.get("redirect_uri") ?? client.redirect_uri);
    for (const [key, value] of Object.entries(parameters)) target.searchParams.set(key, value);
    target.searchParams.set("state", query.get("state")!);
    return target;
  };

  const upstream: GitHubServer = {
    url: server.url,
    client,
    requests: server.requests,
    accessTokens: [],
    tokenCalls: 0,
    async signIn(authorizationUrl, user) {
      const query = await openAuthorizePage(authorizationUrl);
      const code = randomBytes(10).toString("hex");
      grants.set(code, {
        user,
        redirectUri: query.get("redirect_uri") ?? client.redirect_uri,
        codeChallenge: query.get("code_challenge")!,
        scopes: (query.get("scope") ?? "").split(/[\s,]+/).filter(Boolean),
        expiresAt: Date.now() + CODE_LIFETIME_MS,
      });
      return back(query, { code });
    },
    async deny(authorizationUrl) {
      const query = await openAuthorizePage(authorizationUrl);
      return back(query, {
        error: "access_denied",
        error_description: "The user has denied your application access.",
        error_uri: "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-authorization-request-errors/#access-denied",
      });
    },
    close: () => server.close(),
  };
  return upstream;
}
