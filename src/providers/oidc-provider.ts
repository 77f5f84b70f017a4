/**
 * Loads panva's `oidc-provider` for the tenants' OpenID Providers (src/flows/oidc/provider.ts,
 * decisions.md#openid-provider) and the dev identity provider (src/dev/idp.ts), and types the part of
 * it Latch uses: the package ships no type declarations.
 *
 * Why a loader: importing it on Node 20 prints "oidc-provider WARNING: Unsupported runtime…" through
 * console.warn, and Latch supports Node 20.19, where its start-up checks refuse any warning line
 * (dependencies.md#oidc-provider). The import is lazy, so only a process that serves a provider pays
 * for it, and it drops exactly that one line, once, passing every other warning on.
 */
import type { IncomingMessage, ServerResponse } from "node:http";

/** What `interactionDetails` answers: the pending prompt and the authorization request's parameters. */
export interface InteractionDetails {
  uid: string;
  prompt: {
    name: string;
    reasons?: string[];
    details: { missingOIDCScope?: string[]; missingOIDCClaims?: string[]; missingResourceScopes?: Record<string, string[]> };
  };
  params: Record<string, unknown> & { client_id: string; scope?: string; login_hint?: string };
  grantId?: string;
  session?: { accountId?: string };
}

export interface InteractionResult {
  login?: { accountId: string; remember?: boolean; amr?: string[]; ts?: number };
  consent?: { grantId?: string };
  error?: string;
  error_description?: string;
}

export interface OidcGrant {
  addOIDCScope(scope: string): void;
  addOIDCClaims(claims: string[]): void;
  addResourceScope(resource: string, scope: string): void;
  save(): Promise<string>;
}

/** The part of koa's context the tamper hook of the tests reads and rewrites. */
export interface OidcContext {
  oidc?: { route?: string };
  status: number;
  body: unknown;
}

export interface OidcCheck {
  reason: string;
}

export interface OidcPrompt {
  checks: { add(check: OidcCheck): void };
}

/** The part of the library's context a check reads (flows/oidc/provider.ts `KoaLike` types more of it). */
export interface OidcCheckContext {
  oidc: { result?: InteractionResult };
}
type OidcCheckFunction = (ctx: OidcCheckContext) => boolean | Promise<boolean>;

export interface OidcProvider {
  readonly issuer: string;
  /** A node request handler for the whole provider (discovery, authorization, token, JWKS…), paths as the issuer's, without its path. */
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
  /** Saves the result and answers where the browser resumes (the authorization endpoint's resume URL), without redirecting. */
  interactionResult(req: IncomingMessage, res: ServerResponse, result: InteractionResult, options?: { mergeWithLastSubmission?: boolean }): Promise<string>;
  interactionFinished(req: IncomingMessage, res: ServerResponse, result: InteractionResult, options?: { mergeWithLastSubmission?: boolean }): Promise<void>;
  /** koa middleware around every request of the provider. */
  use(middleware: (ctx: OidcContext, next: () => Promise<void>) => Promise<void>): void;
  /** The library's events (an EventEmitter), e.g. `introspection.error` with the request's context and the error. */
  on(event: string, listener: (ctx: object, error: { error?: string }) => void): void;
  Grant: new (properties: { accountId: string; clientId: string }) => OidcGrant;
  /** Koa's: trust X-Forwarded-Proto/Host (the tenant routes set them from the resolved tenant, never the client's). */
  proxy: boolean;
  /** The Client model; its prototype's compareClientSecret is replaced so a stored hash is compared (decisions.md#openid-provider). */
  Client: { prototype: { compareClientSecret(presented: unknown): boolean | Promise<boolean> } };
}

export interface OidcProviderModule {
  /** The library's in-memory adapter, one store per provider; passed explicitly, it prints no "development-only" warning. */
  createMemoryAdapter: () => unknown;
  Provider: new (issuer: string, configuration: Record<string, unknown>) => OidcProvider;
  interactionPolicy: {
    base(): { get(name: string): OidcPrompt | undefined; add(prompt: OidcPrompt, index?: number): void };
    /** A prompt of the policy; one not `requestable` is never named in `prompt` and only runs its checks, in the policy's order. */
    Prompt: new (options: { name: string; requestable: boolean }, ...checks: OidcCheck[]) => OidcPrompt;
    /** `error` is what `prompt=none` answers when the check asks for the prompt; without it, the prompt's own when made with it, else `interaction_required`. */
    Check: (new (reason: string, description: string, ...rest: [check: OidcCheckFunction] | [error: string, check: OidcCheckFunction]) => OidcCheck) & {
      REQUEST_PROMPT: boolean;
      NO_NEED_TO_PROMPT: boolean;
    };
  };
  errors: {
    SessionNotFound: new (...args: never[]) => Error;
    OIDCProviderError: new (...args: never[]) => Error;
    InvalidGrant: new (description?: string) => Error;
    InvalidTarget: new (description?: string) => Error;
  };
}

/** The one line dropped, as oidc-provider 9 prints it (wrapped in colour codes when stderr is a terminal). */
const UNSUPPORTED_RUNTIME_WARNING = "oidc-provider WARNING: Unsupported runtime. Use Node.js v22.x LTS, or a later LTS release.";
// eslint-disable-next-line no-control-regex -- the colour codes are control characters
const ANSI_COLOUR = /\u001b\[[0-9;]*m/g;

let loading: Promise<OidcProviderModule> | undefined;

/** The module, imported once per process. */
export function loadOidcProvider(): Promise<OidcProviderModule> {
  loading ??= importQuietly();
  return loading;
}

async function importQuietly(): Promise<OidcProviderModule> {
  const warn = console.warn;
  let dropped = false;
  console.warn = (...args: unknown[]): void => {
    const line = args.length === 1 && typeof args[0] === "string" ? args[0].replace(ANSI_COLOUR, "") : undefined;
    if (!dropped && line === UNSUPPORTED_RUNTIME_WARNING) {
      dropped = true;
      return;
    }
    warn.apply(console, args);
  };
  try {
    // @ts-expect-error -- no declarations ship with the package; OidcProviderModule types what Latch uses.
    const library = (await import("oidc-provider")) as Omit<OidcProviderModule, "createMemoryAdapter">;
    // Not in the package's documented entry (it has no "exports" map, so the path resolves); the dev fake needs nothing more.
    // @ts-expect-error -- as above
    const memory = (await import("oidc-provider/lib/adapters/memory_adapter.js")) as Pick<OidcProviderModule, "createMemoryAdapter">;
    return { ...library, createMemoryAdapter: memory.createMemoryAdapter };
  } finally {
    console.warn = warn;
  }
}
