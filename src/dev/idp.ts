/**
 * The dev identity provider (contract.md#d27): a fake upstream OpenID provider for people trying
 * federated sign-in in dev mode (served at /dev/idp) and for the tests (test/support/upstream-idp.ts).
 * It is panva's certified `oidc-provider`, so the protocol on the wire is a real one; only the
 * account is fake: its page signs in any email typed, verified or not as the person chooses, and the
 * account's `sub` is a stable function of the email. Consent is granted without a page.
 * Authorization code flow only, PKCE (S256) required, ID tokens signed with keys made at creation.
 * State (sessions, codes, grants) lives in memory: a restart forgets it, fine for a fake.
 */
import { createHash, generateKeyPairSync, type JsonWebKey } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { cryptoRandom, randomToken, type Random } from "../core/random.js";
import { loadOidcProvider, type InteractionDetails, type OidcProvider, type OidcProviderModule } from "../providers/oidc-provider.js";
import { escapeHtml } from "../ui/html.js";

export interface DevIdpClient {
  client_id: string;
  client_secret: string;
  redirect_uris: string[];
  /** How the client authenticates at the token endpoint; client_secret_post, openid-client's default, unless set. */
  token_endpoint_auth_method?: "client_secret_basic" | "client_secret_post";
}

export interface DevIdpOptions {
  /** The issuer, e.g. http://localhost:3000/dev/idp: its path is where the handler is mounted. */
  issuer: string;
  clients: DevIdpClient[];
  /** Cookie keys and key ids come from it (STYLE: randomness from deps); crypto random unless given. */
  random?: Random;
}

/** A person the provider signed in: the claims its ID token carries. */
export interface DevIdpAccount {
  sub: string;
  email: string;
  email_verified: boolean;
  name?: string;
}

export interface DevIdp {
  issuer: string;
  provider: OidcProvider;
  /** Serves the whole provider with request URLs relative to the issuer's path (see devIdpRoutes). Add provider.use middleware before its first request. */
  handler: (req: IncomingMessage, res: ServerResponse) => void;
  /** The private signing keys (RS256 first, then ES256), JWKs with kid, alg and use: tests sign tampered ID tokens with them. */
  signingKeys: JsonWebKey[];
  /** Everyone signed in so far, by sub. */
  accounts: ReadonlyMap<string, DevIdpAccount>;
}

/** base64url(SHA-256("dev-idp:" + lowercased email)), 22 characters: the same person gets the same sub, whatever the case typed. */
export function devIdpSubject(email: string): string {
  return createHash("sha256").update(`dev-idp:${email.trim().toLowerCase()}`).digest("base64url").slice(0, 22);
}

function createSigningKeys(random: Random): JsonWebKey[] {
  const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ format: "jwk" });
  const ec = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey.export({ format: "jwk" });
  return [
    { ...rsa, kid: randomToken(random, 12), alg: "RS256", use: "sig" },
    { ...ec, kid: randomToken(random, 12), alg: "ES256", use: "sig" },
  ];
}

/** What the one page of the provider shows: the sign-in form, an expired interaction, or a protocol error. */
type DevIdpPage =
  | { kind: "sign-in"; action: string; clientId: string; email: string; error?: string }
  | { kind: "expired" }
  | { kind: "error"; error: string; description: string };

// Contrast (WCAG AA): text #1b1b1b on white, white on #1d4ed8, the error #8a1c00 on white.
const STYLE = `body{font-family:system-ui,sans-serif;line-height:1.5;color:#1b1b1b;max-width:32rem;margin:2rem auto;padding:0 1rem}
label{display:block;font-weight:600;margin-top:1rem}input[type=email],input[type=text]{width:100%;padding:.5rem;font-size:1rem;box-sizing:border-box}
.check{display:flex;gap:.5rem;align-items:center;margin-top:1rem}.check label{margin:0;font-weight:400}
button{margin:1.25rem .5rem 0 0;padding:.6rem 1rem;font-size:1rem;border-radius:4px;border:1px solid #1d4ed8}
button[value=sign-in]{background:#1d4ed8;color:#fff}button:focus-visible,input:focus-visible{outline:3px solid #1b1b1b;outline-offset:2px}
.error{color:#8a1c00;font-weight:600}`;

function renderDevIdpPage(page: DevIdpPage): string {
  let title: string;
  let main: string;
  if (page.kind === "sign-in") {
    title = "Sign in to the dev identity provider";
    const error = page.error ? `<p class="error" id="email-error" role="alert">${escapeHtml(page.error)}</p>` : "";
    main = `<h1>${title}</h1>
<p>A fake provider for development and tests: it signs in any email typed, and checks nothing. The application <strong>${escapeHtml(page.clientId)}</strong> asks who you are.</p>
<form method="post" action="${escapeHtml(page.action)}">${error}
<label for="email">Email</label>
<input id="email" name="email" type="email" required autocomplete="email" value="${escapeHtml(page.email)}"${page.error ? ' aria-invalid="true" aria-describedby="email-error"' : ""}>
<label for="name">Name (optional)</label>
<input id="name" name="name" type="text" autocomplete="name">
<div class="check"><input id="verified" name="verified" type="checkbox" value="true" checked><label for="verified">The provider has verified this email</label></div>
<button type="submit" name="action" value="sign-in">Sign in</button><button type="submit" name="action" value="deny" formnovalidate>Deny</button>
</form>`;
  } else if (page.kind === "expired") {
    title = "This sign-in has expired";
    main = `<h1>${title}</h1><p>Go back to the application and start signing in again.</p>`;
  } else {
    title = "The dev identity provider refused the request";
    main = `<h1>${title}</h1><p><code>${escapeHtml(page.error)}</code></p><p>${escapeHtml(page.description)}</p>`;
  }
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title><style>${STYLE}</style></head><body><main>${main}</main></body></html>`;
}

const ONE_FORM_BYTES = 4096;

function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > ONE_FORM_BYTES) return void req.destroy();
      chunks.push(chunk);
    });
    req.on("end", () => resolve(new URLSearchParams(Buffer.concat(chunks).toString("utf8"))));
    req.on("error", reject);
    req.on("close", () => size > ONE_FORM_BYTES && reject(new Error("form too large")));
  });
}

function sendPage(res: ServerResponse, status: number, page: DevIdpPage): void {
  const body = renderDevIdpPage(page);
  res.writeHead(status, {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'",
    "content-length": Buffer.byteLength(body),
  });
  res.end(body);
}

/** Creates a grant of everything the request asked for: the consent a real provider would ask for, given. */
async function grantRequested(provider: OidcProvider, details: InteractionDetails, accountId: string): Promise<string> {
  const grant = new provider.Grant({ accountId, clientId: details.params.client_id });
  grant.addOIDCScope(details.params.scope ?? "openid");
  if (details.prompt.details.missingOIDCScope) grant.addOIDCScope(details.prompt.details.missingOIDCScope.join(" "));
  if (details.prompt.details.missingOIDCClaims) grant.addOIDCClaims(details.prompt.details.missingOIDCClaims);
  return grant.save();
}

/** The interaction page: GET shows the form (or grants consent at once), POST signs in or denies. */
async function handleInteraction(
  idp: { provider: OidcProvider; accounts: Map<string, DevIdpAccount>; mountPath: string },
  uid: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const { provider, accounts } = idp;
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) return sendPage(res, 400, { kind: "expired" });
  const action = `${idp.mountPath}/interaction/${uid}`;
  const loginHint = typeof details.params.login_hint === "string" ? details.params.login_hint : "";
  if (details.prompt.name !== "login") {
    const accountId = details.session?.accountId ?? "";
    return provider.interactionFinished(
      req,
      res,
      { consent: { grantId: await grantRequested(provider, details, accountId) } },
      { mergeWithLastSubmission: true },
    );
  }
  if (req.method !== "POST") return sendPage(res, 200, { kind: "sign-in", action, clientId: details.params.client_id, email: loginHint });
  const form = await readForm(req);
  if (form.get("action") === "deny") {
    const result = { error: "access_denied", error_description: "The person declined at the dev identity provider." };
    return provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
  }
  const email = (form.get("email") ?? "").trim();
  if (email.length > 254 || !/^[^\s@]+@[^\s@]+$/.test(email)) {
    return sendPage(res, 400, { kind: "sign-in", action, clientId: details.params.client_id, email, error: "Type an email address, like ada@example.com." });
  }
  const name = (form.get("name") ?? "").trim().slice(0, 100);
  const sub = devIdpSubject(email);
  accounts.set(sub, { sub, email, email_verified: form.get("verified") === "true", ...(name ? { name } : {}) });
  const result = { login: { accountId: sub, remember: false }, consent: { grantId: await grantRequested(provider, details, sub) } };
  return provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
}

function providerConfiguration(
  module: OidcProviderModule,
  options: DevIdpOptions,
  keys: JsonWebKey[],
  accounts: Map<string, DevIdpAccount>,
  mountPath: string,
) {
  const { Check, base } = module.interactionPolicy;
  const policy = base();
  // A fake is for trying several people in one browser: it asks at every sign-in instead of keeping a session.
  policy
    .get("login")
    ?.checks.add(
      new Check("dev_idp_every_time", "the dev provider asks at every sign-in", (ctx) =>
        ctx.oidc.result?.login ? Check.NO_NEED_TO_PROMPT : Check.REQUEST_PROMPT,
      ),
    );
  const random = options.random ?? cryptoRandom;
  return {
    clients: options.clients.map((client) => ({
      token_endpoint_auth_method: "client_secret_post",
      ...client,
      grant_types: ["authorization_code"],
      response_types: ["code"],
    })),
    jwks: { keys },
    cookies: { keys: [randomToken(random)] },
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"] },
    // As Google and Microsoft do, the ID token itself carries the scope's claims: Latch reads them there.
    conformIdTokenClaims: false,
    responseTypes: ["code"],
    pkce: { required: () => true },
    features: { devInteractions: { enabled: false }, rpInitiatedLogout: { enabled: false } },
    interactions: { policy, url: (_ctx: unknown, interaction: { uid: string }) => `${mountPath}/interaction/${interaction.uid}` },
    findAccount: (_ctx: unknown, sub: string) => {
      const account = accounts.get(sub);
      return account && { accountId: sub, claims: () => ({ ...account }) };
    },
    renderError: (ctx: { type: string; body: string }, out: { error?: string; error_description?: string }) => {
      ctx.type = "html";
      ctx.body = renderDevIdpPage({ kind: "error", error: out.error ?? "server_error", description: out.error_description ?? "" });
    },
    clientBasedCORS: () => false,
    // Every lifetime set, so oidc-provider's "default function called" notices never print.
    ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, Interaction: 600, Session: 600, Grant: 600 },
  };
}

export async function createDevIdp(options: DevIdpOptions): Promise<DevIdp> {
  const module = await loadOidcProvider();
  const accounts = new Map<string, DevIdpAccount>();
  const mountPath = new URL(options.issuer).pathname.replace(/\/$/, "");
  const signingKeys = createSigningKeys(options.random ?? cryptoRandom);
  // The library's configuration takes its own copy of the keys; the tests keep theirs.
  const configuration = providerConfiguration(module, options, structuredClone(signingKeys), accounts, mountPath);
  const provider = new module.Provider(options.issuer, { ...configuration, adapter: module.createMemoryAdapter() });
  // koa composes its middleware when callback() is called: made at the first request, so middleware
  // added with provider.use before then (the tests' tamper hook) takes part.
  let serveProvider: ReturnType<OidcProvider["callback"]> | undefined;
  const idp = { provider, accounts, mountPath };
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const uid = /^\/interaction\/([\w-]{1,64})(?:\?|$)/.exec(req.url ?? "")?.[1];
    if (uid === undefined) return (serveProvider ??= provider.callback())(req, res);
    handleInteraction(idp, uid, req, res).catch((error: unknown) => {
      if (res.headersSent) return void res.destroy();
      // An interaction cookie gone or expired is the person's everyday error; anything else is ours.
      const expired = error instanceof module.errors.SessionNotFound;
      sendPage(res, expired ? 400 : 500, expired ? { kind: "expired" } : { kind: "error", error: "server_error", description: "" });
    });
  };
  return { issuer: options.issuer, provider, handler, signingKeys, accounts };
}

/**
 * Mounts the provider at `prefix` (/dev/idp) in a Fastify app, as oidc-provider's docs mount it with
 * a connect middleware: the request's URL is made relative to the prefix and the original kept as
 * `originalUrl`, from which oidc-provider works out the URLs it writes. Fastify parses no body here
 * (oidc-provider reads its own forms) and sends nothing (the reply is hijacked). `idp` may be a
 * function, for a provider made once the server listens and knows its port; 404 until it answers one.
 */
export async function devIdpRoutes(app: FastifyInstance, idp: DevIdp | (() => DevIdp | undefined), prefix = "/dev/idp"): Promise<void> {
  const current = typeof idp === "function" ? idp : () => idp;
  const mount = (request: FastifyRequest, reply: FastifyReply): void => {
    const target = current();
    if (target === undefined) return void reply.code(404).send({ code: "not_found", message: "No dev identity provider is running." });
    reply.hijack();
    const raw = request.raw as IncomingMessage & { originalUrl?: string };
    raw.originalUrl = raw.url;
    raw.url = (raw.url ?? "").slice(prefix.length) || "/";
    if (!raw.url.startsWith("/")) raw.url = `/${raw.url}`;
    target.handler(raw, reply.raw);
  };
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", (_request, _payload, done) => done(null));
    for (const url of [prefix, `${prefix}/*`]) scope.all(url, { schema: { hide: true } }, mount);
  });
}
