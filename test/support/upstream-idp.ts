/**
 * An upstream OpenID provider for the federation tests (contract.md#d27): the dev identity provider
 * (src/dev/idp.ts, panva's oidc-provider) on its own loopback server, issuer http://127.0.0.1:<port>.
 * `signIn` drives it as a browser would, from the authorization URL Latch redirected to, back to the
 * client's redirect_uri. The tamper hooks make it misbehave for attack tests: the token endpoint's
 * ID token rewritten and re-signed with the provider's own key, with a foreign key or with none, or
 * the next sign-in declined (error=access_denied on the redirect, from oidc-provider itself).
 */
import { generateKeyPairSync } from "node:crypto";
import { createServer } from "node:http";
import { decodeJwt, decodeProtectedHeader, importJWK, SignJWT, UnsecuredJWT, type JWTPayload } from "jose";
import { createDevIdp, type DevIdp, type DevIdpClient } from "../../src/dev/idp.js";
import { seededRandom } from "../../src/core/random.js";
import { listenOnLoopback } from "./local-servers.js";

export interface Person {
  email: string;
  /** The page's checkbox "the provider has verified this email". */
  verified: boolean;
  name?: string;
}

/** How a tampered ID token is signed: "provider" with the provider's own key (only the payload lies), "foreign" with a fresh key under the same kid, "none" unsigned. */
export type TamperSigner = "provider" | "foreign" | "none";

export interface TokenTamper {
  /** The ID token's payload as the provider made it → the payload sent. */
  payload?: (payload: JWTPayload) => JWTPayload;
  signWith?: TamperSigner;
  /** The whole JSON answer of the token endpoint, after the ID token's change (e.g. drop the id_token). */
  body?: (body: Record<string, unknown>) => Record<string, unknown>;
}

export interface UpstreamIdp {
  issuer: string;
  idp: DevIdp;
  /** The client registered for the tests: id, secret (client_secret_post) and redirect URI. */
  client: Omit<DevIdpClient, "redirect_uris"> & { redirect_uri: string };
  /** Set to rewrite every token answer until cleared (undefined). */
  tamper: TokenTamper | undefined;
  /** The next signIn presses the page's "Deny": the provider redirects back with error=access_denied. */
  denyNextSignIn(): void;
  /** Token endpoint calls so far (a replayed code is a second call). */
  tokenCalls: number;
  /**
   * Follows the provider's redirects from `authorizationUrl`, keeping its cookies, fills the sign-in
   * form with `person` and returns the redirect to the client (carrying code and state, or error).
   * Throws when the provider answers anything else (an error page, a redirect loop).
   */
  signIn(authorizationUrl: string | URL, person: Person): Promise<URL>;
  /** The same for `response_mode=form_post`: the auto-submitting page's form, which the browser would POST to the client. */
  signInByFormPost(authorizationUrl: string | URL, person: Person): Promise<FormPost>;
  close(): Promise<void>;
}

export interface UpstreamIdpOptions {
  /** Where the provider sends the person back: the redirect_uri the test's client registers. */
  redirectUri?: string;
  clientId?: string;
  clientSecret?: string;
  tokenEndpointAuthMethod?: DevIdpClient["token_endpoint_auth_method"];
}

async function resign(idToken: string, idp: DevIdp, tamper: TokenTamper): Promise<string> {
  const header = decodeProtectedHeader(idToken);
  const payload = (tamper.payload ?? ((p: JWTPayload) => p))(decodeJwt(idToken));
  if (tamper.signWith === "none") return new UnsecuredJWT(payload).encode();
  const alg = header.alg ?? "RS256";
  const foreign = () =>
    (alg.startsWith("ES") ? generateKeyPairSync("ec", { namedCurve: "P-256" }) : generateKeyPairSync("rsa", { modulusLength: 2048 })).privateKey.export({
      format: "jwk",
    });
  const jwk = tamper.signWith === "foreign" ? foreign() : idp.signingKeys.find((key) => key.kid === header.kid);
  if (!jwk) throw new Error(`no signing key with kid ${header.kid}`);
  return new SignJWT(payload).setProtectedHeader({ alg, ...(header.kid ? { kid: header.kid } : {}) }).sign(await importJWK(jwk, alg));
}

/** The form's action and the hidden fields of the provider's page: a person reading it would submit the same. */
function formAction(html: string, pageUrl: URL): URL {
  const action = /<form[^>]*\saction="([^"]+)"/.exec(html)?.[1];
  if (!action) throw new Error(`the provider answered a page without a form: ${html.slice(0, 300)}`);
  return new URL(action.replaceAll("&amp;", "&"), pageUrl);
}

/** A browser's cookies for one site, enough for the provider's and Latch's: name → value, expiry honoured. */
export class CookieJar {
  readonly #cookies = new Map<string, string>();
  store(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair = "", ...attributes] = line.split(";");
      const cut = pair.indexOf("=");
      const name = pair.slice(0, cut).trim();
      const value = pair.slice(cut + 1).trim();
      const expired = attributes.some((a) => /^\s*expires=/i.test(a) && Date.parse(a.split("=")[1]!) < Date.now());
      if (value === "" || expired) this.#cookies.delete(name);
      else this.#cookies.set(name, value);
    }
  }
  header(): string {
    return [...this.#cookies].map(([name, value]) => `${name}=${value}`).join("; ");
  }
}

/** What a form_post answer makes the browser POST to the client: the form's action and its hidden fields. */
export interface FormPost {
  action: URL;
  fields: URLSearchParams;
}

/** oidc-provider's form_post page: its one form's action and hidden inputs, entities undone (html_safe.js escapes five). */
function formPostOf(html: string, pageUrl: URL): FormPost {
  const unescape = (text: string) =>
    text.replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&quot;", '"').replaceAll("&#39;", "'").replaceAll("&amp;", "&");
  const fields = new URLSearchParams();
  for (const [, name, value] of html.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)"\/>/g)) fields.append(unescape(name!), unescape(value!));
  return { action: formAction(html, pageUrl), fields };
}

/**
 * A browser at the provider: follows its redirects from `authorizationUrl`, keeping its cookies,
 * fills the sign-in form with `person` (or presses "Deny") and returns the first URL outside the
 * issuer's path: the redirect to the client, with code and state or error. The issuer may share the
 * client's origin (dev mode serves it at /dev/idp), so "outside" is by path, not origin. Throws on
 * any other answer (an error page, a redirect loop).
 */
export async function signInAtProvider(issuer: string, authorizationUrl: string | URL, person: Person, options: { deny?: boolean } = {}): Promise<URL> {
  const back = await driveProvider(issuer, authorizationUrl, person, options);
  if (back instanceof URL) return back;
  throw new Error(`the provider answered by form_post to ${back.action.href}`);
}

/** As signInAtProvider, for `response_mode=form_post`: the page's form to the client (its answer is 200, or 400 for an error). */
export async function signInAtProviderByFormPost(
  issuer: string,
  authorizationUrl: string | URL,
  person: Person,
  options: { deny?: boolean } = {},
): Promise<FormPost> {
  const back = await driveProvider(issuer, authorizationUrl, person, options);
  if (back instanceof URL) throw new Error(`the provider redirected to the client instead of a form_post: ${back.href}`);
  return back;
}

async function driveProvider(issuer: string, authorizationUrl: string | URL, person: Person, options: { deny?: boolean }): Promise<URL | FormPost> {
  const jar = new CookieJar();
  const base = issuer.replace(/\/$/, "");
  const atProvider = (url: URL) => url.href === base || url.href.startsWith(`${base}/`);
  let url = new URL(authorizationUrl);
  let form: URLSearchParams | undefined;
  for (let hop = 0; hop < 12; hop++) {
    if (!atProvider(url)) return url; // back at the client
    const response = await fetch(url, {
      method: form ? "POST" : "GET",
      redirect: "manual",
      headers: { cookie: jar.header(), ...(form ? { "content-type": "application/x-www-form-urlencoded" } : {}) },
      ...(form ? { body: form.toString() } : {}),
    });
    jar.store(response);
    form = undefined;
    const location = response.headers.get("location");
    if (response.status >= 300 && response.status < 400 && location) {
      url = new URL(location, url);
      continue;
    }
    const page = await response.text();
    // form_post: the page's form goes back to the client (an error too, with status 400).
    if ((response.status === 200 || response.status === 400) && page.includes("<title>Submitting Callback</title>")) return formPostOf(page, url);
    if (response.status !== 200) throw new Error(`the provider answered ${response.status}: ${page.slice(0, 500)}`);
    const action = formAction(page, url);
    form = new URLSearchParams({ email: person.email, name: person.name ?? "", action: options.deny ? "deny" : "sign-in" });
    if (person.verified) form.set("verified", "true");
    url = action;
  }
  throw new Error("the provider redirected too many times");
}

export async function startUpstreamIdp(options: UpstreamIdpOptions = {}): Promise<UpstreamIdp> {
  let handle: DevIdp["handler"] = (_req, res) => void res.writeHead(503).end();
  const server = createServer((req, res) => handle(req, res));
  const issuer = await listenOnLoopback(server);
  const client = {
    client_id: options.clientId ?? "latch-test",
    client_secret: options.clientSecret ?? "upstream-client-secret-for-tests",
    redirect_uri: options.redirectUri ?? "https://app.example/auth/federated/upstream/callback",
    token_endpoint_auth_method: options.tokenEndpointAuthMethod ?? ("client_secret_post" as const),
  };
  const idp = await createDevIdp({ issuer, clients: [{ ...client, redirect_uris: [client.redirect_uri] }], random: seededRandom("upstream-idp") });
  handle = idp.handler;
  let denyNext = false;
  const upstream: UpstreamIdp = {
    issuer,
    idp,
    client,
    tamper: undefined,
    tokenCalls: 0,
    denyNextSignIn: () => void (denyNext = true),
    async signIn(authorizationUrl, person) {
      const deny = denyNext;
      denyNext = false;
      return signInAtProvider(issuer, authorizationUrl, person, { deny });
    },
    async signInByFormPost(authorizationUrl, person) {
      const deny = denyNext;
      denyNext = false;
      return signInAtProviderByFormPost(issuer, authorizationUrl, person, { deny });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  // Around every request of the provider: rewrite the token endpoint's answer before it leaves.
  idp.provider.use(async (ctx, next) => {
    await next();
    if (ctx.oidc?.route !== "token") return;
    upstream.tokenCalls += 1;
    const tamper = upstream.tamper;
    if (!tamper || ctx.status !== 200 || typeof ctx.body !== "object" || ctx.body === null) return;
    let body = { ...(ctx.body as Record<string, unknown>) };
    if (typeof body.id_token === "string" && (tamper.payload || tamper.signWith)) body.id_token = await resign(body.id_token, idp, tamper);
    if (tamper.body) body = tamper.body(body);
    ctx.body = body;
  });
  return upstream;
}
