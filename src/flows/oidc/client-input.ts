/**
 * decisions.md#openid-provider-clients: what an admin may say about an OAuth client, as one TypeBox
 * schema per call (the route's body and the CLI's input alike), and the checks a schema can't say:
 * each redirect URI's scheme, host and form. The provider compares redirect URIs as strings
 * (contract.md#d28: "match exactly"), so what is stored must be one unambiguous spelling.
 */
import { Type, type Static, type TSchema } from "typebox";
import { Value } from "typebox/value";
import { StringEnum } from "../../core/schema.js";
import { AuthError, validationIssuesOf, type ValidationIssue } from "../../errors.js";
import { isShowableName } from "../../security/identity.js";
import type { OauthClientType } from "../../store/oauth-clients.js";

export const OAUTH_CLIENT_TYPES = ["confidential", "public"] as const satisfies readonly OauthClientType[];
export const CLIENT_NAME_MAX_LENGTH = 100;
export const REDIRECT_URI_MAX_LENGTH = 2048;
export const MAX_REDIRECT_URIS = 10;
/** What a client id looks like: ours are 22 base64url characters; the column holds 64. */
export const CLIENT_ID_PATTERN = "^[A-Za-z0-9_-]{1,64}$";

export const ClientIdField = Type.String({ pattern: CLIENT_ID_PATTERN, description: "The client's id: random, public, given by Latch at creation." });

const RedirectUri = Type.String({ minLength: 1, maxLength: REDIRECT_URI_MAX_LENGTH });
const fields = {
  name: Type.String({ minLength: 1, maxLength: CLIENT_NAME_MAX_LENGTH, description: "The application's name, as the consent page shows it." }),
  type: StringEnum(OAUTH_CLIENT_TYPES, {
    description: "`confidential` (a server that keeps a secret: one is made and shown once) or `public` (a browser or native app: no secret, PKCE S256).",
  }),
  redirectUris: Type.Array(RedirectUri, {
    minItems: 1,
    maxItems: MAX_REDIRECT_URIS,
    description:
      "Where the provider may send the browser back, each matched exactly: an absolute URI in its canonical form, without fragment, wildcard or credentials; `https:`, `http:` only for a loopback host (`localhost`, `127.0.0.0/8`, `[::1]`), or a private-use scheme (`com.example.app:/callback`, RFC 8252) for a public client.",
  }),
  postLogoutRedirectUris: Type.Array(RedirectUri, {
    maxItems: MAX_REDIRECT_URIS,
    description: "Where the provider may send the browser after a logout the client asked for; the same rules as `redirectUris`.",
  }),
  firstParty: Type.Boolean({ description: "A first-party client skips the consent page (default true)." }),
};

export const NewOauthClientSchema = Type.Object(
  {
    name: fields.name,
    type: fields.type,
    redirectUris: fields.redirectUris,
    postLogoutRedirectUris: Type.Optional(fields.postLogoutRedirectUris),
    firstParty: Type.Optional(fields.firstParty),
  },
  { additionalProperties: false },
);
export type NewOauthClientInput = Static<typeof NewOauthClientSchema>;

/** The type and the secret never change: a client that needs another is made anew. */
export const OauthClientChangesSchema = Type.Object(
  {
    name: Type.Optional(fields.name),
    redirectUris: Type.Optional(fields.redirectUris),
    postLogoutRedirectUris: Type.Optional(fields.postLogoutRedirectUris),
    firstParty: Type.Optional(fields.firstParty),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type OauthClientChangesInput = Static<typeof OauthClientChangesSchema>;

function refuse(message: string, issues: ValidationIssue[]): AuthError {
  return new AuthError("validation_failed", { message, details: issues });
}

/**
 * The CLI's input passes the route's schema too (the route's ajv already did, so this is a no-op there).
 * With the schema, a value out of a list names every allowed value, as the tenant settings' errors do.
 */
export function assertClientInput<T extends TSchema>(schema: T, input: unknown): asserts input is Static<T> {
  if (!Value.Check(schema, input)) throw refuse("The client is not valid.", validationIssuesOf(Value.Errors(schema, input), "", schema));
}

/** Printable on a consent page: trimmed, no control or invisible formatting characters. */
export function checkClientName(raw: string): string {
  const name = raw.trim();
  if (name === "" || !isShowableName(name, raw))
    throw refuse("The name is empty or holds a control or invisible formatting character.", [
      { field: "name", rule: "name", message: `1 to ${CLIENT_NAME_MAX_LENGTH} characters, no control or invisible formatting characters` },
    ]);
  return name;
}

/** RFC 8252 8.3: a loopback redirect is plain http to the machine itself; the WHATWG parser has already turned `127.1` into `127.0.0.1`. */
function isLoopbackHost(hostname: string): boolean {
  return hostname === "localhost" || hostname === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

/**
 * RFC 8252 7.1: a native app's private-use scheme is a domain it controls, reversed (`com.example.app`),
 * so it holds a dot; that also keeps out `javascript:`, `data:`, `file:` and the like.
 */
const PRIVATE_USE_SCHEME = /^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+:$/;

/** Why `raw` can't be a redirect URI of a client of this type, or undefined when it can. */
function redirectUriProblem(raw: string, type: OauthClientType): string | undefined {
  const url = URL.parse(raw);
  if (!url) return "must be an absolute URI";
  if (raw.includes("#")) return "must not hold a fragment";
  if (raw.includes("*")) return "must not hold a wildcard: each URI is matched exactly";
  // `https://@host` parses to an empty username: look at the authority as written too.
  const authority = /^[^:]*:\/\/([^/?#]*)/.exec(raw)?.[1] ?? "";
  if (url.username !== "" || url.password !== "" || authority.includes("@")) return "must not hold credentials";
  // One spelling only: the provider compares strings, and a URI that the parser rewrites (case,
  // default port, `127.1`, a dot segment, a space) would be one the browser comes back with differently.
  if (url.href !== raw) return `must be written in its canonical form: ${url.href}`;
  if (url.protocol === "https:") return url.hostname === "" ? "must name a host" : undefined;
  if (url.protocol === "http:")
    return isLoopbackHost(url.hostname) ? undefined : "may use http only for a loopback host (localhost, 127.0.0.0/8, [::1]); use https";
  if (!PRIVATE_USE_SCHEME.test(url.protocol)) return "must use https, http on a loopback host, or a private-use scheme such as com.example.app:/callback";
  if (type !== "public") return "may use a private-use scheme only for a public client (a native app)";
  return undefined;
}

/** The URIs as given, each checked, with no repeats; `field` names the list in the error. */
export function checkRedirectUris(uris: readonly string[], type: OauthClientType, field: "redirectUris" | "postLogoutRedirectUris"): string[] {
  const issues: ValidationIssue[] = [];
  uris.forEach((uri, i) => {
    const problem = redirectUriProblem(uri, type);
    if (problem !== undefined) issues.push({ field: `${field}.${i}`, rule: "redirectUri", message: problem });
    else if (uris.indexOf(uri) !== i) issues.push({ field: `${field}.${i}`, rule: "uniqueItems", message: "is listed twice" });
  });
  if (issues.length > 0) throw refuse(`A URI of ${field} can't be used.`, issues);
  return [...uris];
}

/** A redirect URI on a native app's private-use scheme (checked already by redirectUriProblem). */
export function isPrivateUseUri(uri: string): boolean {
  const url = URL.parse(uri);
  return url !== null && PRIVATE_USE_SCHEME.test(url.protocol);
}

/**
 * decisions.md#openid-provider-clients: a client with a private-use scheme is a native app to the
 * provider (`application_type: native`), which refuses an https URI on a loopback host (RFC 8252 8.3:
 * loopback is plain http); a web client refuses any private-use scheme. A public client can't list
 * both kinds, in either list (the provider checks the logout URIs the same way): refused here, with
 * the URI named, rather than by the provider when it maps the client at sign-in.
 */
export function checkApplicationType(redirectUris: readonly string[], postLogoutRedirectUris: readonly string[]): void {
  const lists = { redirectUris, postLogoutRedirectUris };
  if (![...redirectUris, ...postLogoutRedirectUris].some(isPrivateUseUri)) return;
  const issues: ValidationIssue[] = [];
  for (const [field, uris] of Object.entries(lists)) {
    uris.forEach((uri, i) => {
      const url = URL.parse(uri);
      if (url?.protocol === "https:" && isLoopbackHost(url.hostname))
        issues.push({
          field: `${field}.${i}`,
          rule: "redirectUri",
          message: "may not be https on a loopback host beside a private-use scheme: a native app's loopback redirect is http (RFC 8252 8.3)",
        });
    });
  }
  if (issues.length > 0) throw refuse("A native app's URIs (a private-use scheme) can't include https on a loopback host.", issues);
}
