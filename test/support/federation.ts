/**
 * Federated sign-in against a real upstream (contract.md#d27): the harness's tenant with a connection
 * `up` to an oidc-provider on its own loopback server (test/support/upstream-idp.ts), and a browser's
 * round trip: start at Latch, sign in at the provider, back to Latch's callback with the cookie.
 */
import assert from "node:assert/strict";
import type { LightMyRequestResponse } from "fastify";
import { adminHeaders } from "./flows.js";
import { get, post, type Harness } from "./harness.js";
import { startGitHubServer, type GitHubServer } from "./github-server.js";
import { startUpstreamIdp, type Person, type UpstreamIdp } from "./upstream-idp.js";

export const CONNECTION = "up";
export const GITHUB_CONNECTION = "gh";

/** The provider's side of a round trip: the person signs in there and is sent back to the callback. */
export interface SignInProvider<P> {
  signIn(authorizationUrl: string | URL, person: P): Promise<URL>;
}

/** An upstream provider and a connection `up` to it on the harness's tenant. */
export async function connectUpstream(
  h: Harness,
  t: { after(fn: () => Promise<void>): void },
  settings: { allowSignup?: boolean; emailDomains?: string[] } = {},
): Promise<UpstreamIdp> {
  const idp = await startUpstreamIdp({
    redirectUri: `https://${h.tenant.domain}/auth/federated/${CONNECTION}/callback`,
    tokenEndpointAuthMethod: "client_secret_basic",
  });
  t.after(() => idp.close());
  const body = {
    id: CONNECTION,
    type: "oidc",
    displayName: "Upstream",
    issuer: idp.issuer,
    clientId: idp.client.client_id,
    clientSecret: idp.client.client_secret,
    ...settings,
  };
  const res = await post(h, "/auth/admin/connections", body, { headers: adminHeaders(h) });
  assert.equal(res.statusCode, 201, res.body);
  return idp;
}

/** A local GitHub (test/support/github-server.ts) and a `github` connection `gh` whose issuer is its URL. */
export async function connectGitHub(
  h: Harness,
  t: { after(fn: () => Promise<void>): void },
  settings: { allowSignup?: boolean; emailDomains?: string[] } = {},
): Promise<GitHubServer> {
  const github = await startGitHubServer({ redirectUri: `https://${h.tenant.domain}/auth/federated/${GITHUB_CONNECTION}/callback` });
  t.after(() => github.close());
  const body = {
    id: GITHUB_CONNECTION,
    type: "github",
    displayName: "GitHub",
    issuer: github.url,
    clientId: github.client.client_id,
    clientSecret: github.client.client_secret,
    ...settings,
  };
  const res = await post(h, "/auth/admin/connections", body, { headers: adminHeaders(h) });
  assert.equal(res.statusCode, 201, res.body);
  return github;
}

/** The value of a cookie an answer sets, or undefined. */
export function setCookieValue(res: LightMyRequestResponse, name: string): string | undefined {
  const lines = ([] as string[]).concat(res.headers["set-cookie"] ?? []);
  const line = lines.find((l) => l.startsWith(`${name}=`));
  return line === undefined ? undefined : line.slice(name.length + 1).split(";")[0];
}

export interface RoundTrip {
  start: LightMyRequestResponse;
  /** The redirect the provider sent the browser back with (code and state, or error). */
  back: URL;
  flowCookie: string;
  callback: LightMyRequestResponse;
}

export interface RoundTripOptions {
  /** The connection's id: `up` unless told. */
  connection?: string;
  returnTo?: string;
  /** The `latch_fed` cookie sent to the callback: the start's unless told (null: none). */
  flowCookie?: string | null;
  /** Changes the provider's redirect before it reaches the callback (an attacker's edit). */
  editBack?: (back: URL) => void;
  /** The session cookie sent along (a signed-in browser). */
  session?: string;
  /** A flow started elsewhere (a link from the account page): its provider URL and cookie. */
  started?: { authorizationUrl: string; flowCookie: string };
}

/** A browser's round trip through the provider, ending with Latch's answer to the callback. */
export async function federatedRoundTrip<P = Person>(h: Harness, idp: SignInProvider<P>, person: P, options: RoundTripOptions = {}): Promise<RoundTrip> {
  let start: LightMyRequestResponse | undefined;
  let authorizationUrl: string;
  let startedCookie: string;
  if (options.started) {
    ({ authorizationUrl, flowCookie: startedCookie } = options.started);
  } else {
    const query = options.returnTo === undefined ? "" : `?returnTo=${encodeURIComponent(options.returnTo)}`;
    start = await get(h, `/auth/federated/${options.connection ?? CONNECTION}/start${query}`);
    assert.equal(start.statusCode, 302, start.body);
    authorizationUrl = String(start.headers.location);
    startedCookie = setCookieValue(start, "latch_fed")!;
    assert.ok(startedCookie, "the start sets latch_fed");
  }
  const back = await idp.signIn(authorizationUrl, person);
  options.editBack?.(back);
  const flowCookie = options.flowCookie === undefined ? startedCookie : options.flowCookie;
  const cookies = [flowCookie === null ? undefined : `latch_fed=${flowCookie}`, options.session ? `session_id=${options.session}` : undefined].filter(Boolean);
  const callback = await get(h, `${back.pathname}${back.search}`, { headers: cookies.length ? { cookie: cookies.join("; ") } : {} });
  return { start: start!, back, flowCookie: startedCookie, callback };
}

/** The error page a failed callback sends the browser to, by its reason. */
export function failureReasonOf(res: LightMyRequestResponse): string | undefined {
  assert.equal(res.statusCode, 302, res.body);
  const location = new URL(String(res.headers.location), "https://x.invalid");
  if (location.pathname !== "/ui/federated-error") return undefined;
  assert.equal(location.searchParams.get("code"), "federation_failed");
  return location.searchParams.get("reason") ?? undefined;
}
