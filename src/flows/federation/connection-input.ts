/**
 * decisions.md#federated-connections: what an admin may say about a connection, as one TypeBox schema
 * per call (the route's body and the CLI's input alike), and the checks a schema can't say: the
 * issuer's URL, presets, default scopes and email domains.
 */
import { Type, type Static, type TSchema } from "typebox";
import { Value } from "typebox/value";
import { StringEnum } from "../../core/schema.js";
import { AuthError, validationIssuesOf, type ValidationIssue } from "../../errors.js";
import { isShowableName } from "../../security/identity.js";
import type { ConnectionType } from "../../store/connections.js";

export const CONNECTION_TYPES = ["oidc", "google", "microsoft", "apple", "gitlab", "github"] as const satisfies readonly ConnectionType[];

/**
 * The issuers the presets fill in. Microsoft's is personal accounts; a company's Entra tenant gives its
 * own issuer (`https://login.microsoftonline.com/{tenant}/v2.0`), which overrides the preset.
 */
export const PRESET_ISSUERS: Partial<Record<ConnectionType, string>> = {
  google: "https://accounts.google.com",
  // Personal Microsoft accounts: the issuer their discovery names (`/consumers/v2.0` answers with
  // this tenant id as `iss`, and openid-client requires the two to be equal).
  microsoft: "https://login.microsoftonline.com/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0",
  apple: "https://appleid.apple.com",
  gitlab: "https://gitlab.com",
};

/**
 * `openid` is what makes the provider send an ID token; GitHub has none and reads the user and emails
 * API. Apple knows `name` and `email`, not `profile`.
 */
export const DEFAULT_SCOPES = { oidc: ["openid", "email", "profile"], apple: ["openid", "email", "name"], github: ["read:user", "user:email"] } as const;

export const CONNECTION_ID_PATTERN = "^[a-z0-9-]{1,32}$";
export const DISPLAY_NAME_MAX_LENGTH = 100;
/** The `scopes` column (varchar(1024), space-separated). */
const SCOPES_MAX_LENGTH = 1024;
const PRINTABLE = "^[\\x21-\\x7e]+$";
/** A DNS name (any case; stored lowercase): dotted labels of letters, digits and inner hyphens. */
const DOMAIN_PATTERN = "^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)+[A-Za-z]{2,63}$";

export const ConnectionIdField = Type.String({ pattern: CONNECTION_ID_PATTERN, description: "The connection's slug, `[a-z0-9-]{1,32}`: in its sign-in URLs." });
const fields = {
  type: StringEnum(CONNECTION_TYPES, {
    description: "`oidc` (any issuer with discovery), a preset that fills the issuer (`google`, `microsoft`, `apple`, `gitlab`), or `github`.",
  }),
  displayName: Type.String({ minLength: 1, maxLength: DISPLAY_NAME_MAX_LENGTH, description: "What the sign-in button says (`Sign in with …`)." }),
  issuer: Type.String({
    minLength: 1,
    maxLength: 2048,
    description:
      "The OpenID issuer URL (https). Required for `oidc`; overrides a preset's (a company's Entra tenant); for `github`, a GitHub Enterprise Server's base URL (absent: github.com).",
  }),
  clientId: Type.String({ minLength: 1, maxLength: 512, pattern: PRINTABLE, description: "The client id the provider gave." }),
  clientSecret: Type.String({
    minLength: 1,
    maxLength: 1024,
    pattern: PRINTABLE,
    description: "The client secret the provider gave: sealed at rest, never returned or logged.",
  }),
  scopes: Type.Array(Type.String({ minLength: 1, maxLength: 100, pattern: PRINTABLE }), {
    minItems: 1,
    maxItems: 20,
    description:
      "Default `openid email profile` (OpenID types, which must include `openid`), `openid email name` (`apple`) or `read:user user:email` (`github`).",
  }),
  allowSignup: Type.Boolean({ description: "Whether a new person may get an account by this connection (default true)." }),
  emailDomains: Type.Array(Type.String({ maxLength: 253, pattern: DOMAIN_PATTERN }), {
    minItems: 1,
    maxItems: 50,
    description: "Only emails at these domains may sign up by this connection; any when absent or null.",
  }),
};

export const NewConnectionSchema = Type.Object(
  {
    id: ConnectionIdField,
    type: fields.type,
    displayName: fields.displayName,
    issuer: Type.Optional(fields.issuer),
    clientId: fields.clientId,
    clientSecret: fields.clientSecret,
    scopes: Type.Optional(fields.scopes),
    allowSignup: Type.Optional(fields.allowSignup),
    emailDomains: Type.Optional(Type.Union([fields.emailDomains, Type.Null()])),
  },
  { additionalProperties: false },
);
export type NewConnectionInput = Static<typeof NewConnectionSchema>;

export const ConnectionChangesSchema = Type.Object(
  {
    type: Type.Optional(fields.type),
    displayName: Type.Optional(fields.displayName),
    issuer: Type.Optional(Type.Union([fields.issuer, Type.Null()], { description: "The issuer, as on create; null goes back to the preset's." })),
    clientId: Type.Optional(fields.clientId),
    clientSecret: Type.Optional({ ...fields.clientSecret, description: "A new client secret: replaces the stored one." }),
    scopes: Type.Optional(fields.scopes),
    allowSignup: Type.Optional(fields.allowSignup),
    emailDomains: Type.Optional(Type.Union([fields.emailDomains, Type.Null()])),
  },
  { additionalProperties: false },
);
export type ConnectionChangesInput = Static<typeof ConnectionChangesSchema>;

function refuse(message: string, issues: ValidationIssue[]): AuthError {
  return new AuthError("validation_failed", { message, details: issues });
}

/**
 * The CLI's input passes the route's schema too (the route's ajv already did, so this is a no-op there).
 * With the schema, a value out of a list names every allowed value, as the tenant settings' errors do.
 */
export function assertMatches<T extends TSchema>(schema: T, input: unknown, what: string): asserts input is Static<T> {
  if (!Value.Check(schema, input)) throw refuse(`The ${what} is not valid.`, validationIssuesOf(Value.Errors(schema, input), "", schema));
}

/** Printable on a sign-in button: trimmed, no control or invisible formatting characters. */
export function checkDisplayName(raw: string): string {
  const name = raw.trim();
  if (name === "" || !isShowableName(name, raw))
    throw refuse("The display name is empty or holds a control or invisible formatting character.", [
      { field: "displayName", rule: "name", message: `1 to ${DISPLAY_NAME_MAX_LENGTH} characters, no control or invisible formatting characters` },
    ]);
  return name;
}

/**
 * The issuer a connection of `type` ends with: the given one (an https URL, or http only where private
 * networks are allowed, i.e. development and tests), else the preset's; `oidc` needs one. For `github`
 * it is a GitHub Enterprise Server's base URL (its API under `/api/v3`), and null is github.com.
 */
export function resolveIssuer(type: ConnectionType, given: string | undefined, allowHttp: boolean): string | null {
  if (given === undefined) {
    if (type === "github") return null;
    const preset = PRESET_ISSUERS[type];
    if (preset === undefined) throw refuse("An oidc connection needs its issuer.", [{ field: "issuer", rule: "required", message: "is required for oidc" }]);
    return preset;
  }
  let url: URL | undefined;
  try {
    url = new URL(given);
  } catch {
    url = undefined;
  }
  const schemeAllowed = url?.protocol === "https:" || (allowHttp && url?.protocol === "http:");
  if (!url || !schemeAllowed || url.username !== "" || url.password !== "" || url.search !== "" || url.hash !== "")
    throw refuse("The issuer must be an https URL without credentials, query or fragment.", [
      { field: "issuer", rule: "url", message: allowHttp ? "must be an http(s) URL" : "must be an https URL" },
    ]);
  if (type === "github") return githubServerOrigin(url);
  // Kept as given: the ID token's `iss` must equal it exactly (OpenID Connect Core 3.1.3.7).
  return given;
}

/** github.com's own hosts: its API is not under `/api/v3`, so it is the default (no issuer), never a server URL. */
const GITHUB_COM_HOSTS = new Set(["github.com", "www.github.com", "api.github.com"]);

/**
 * A GitHub Enterprise Server is served at the root of its host (web there, API under `/api/v3`), so only
 * the origin counts; a path would send the authorization and the API calls to pages that aren't them.
 */
function githubServerOrigin(url: URL): string {
  if (GITHUB_COM_HOSTS.has(url.hostname))
    throw refuse("github.com needs no issuer; an issuer is a GitHub Enterprise Server.", [
      { field: "issuer", rule: "github", message: "must be absent for github.com" },
    ]);
  if (url.pathname !== "/")
    throw refuse("A GitHub Enterprise Server's issuer is its base URL, without a path.", [
      { field: "issuer", rule: "github", message: "must be a base URL without a path" },
    ]);
  return url.origin;
}

/** The given scopes without repeats, or the type's defaults; an OpenID type must ask for `openid`. */
export function resolveScopes(type: ConnectionType, given: readonly string[] | undefined): string[] {
  if (given === undefined) return [...(type === "github" ? DEFAULT_SCOPES.github : type === "apple" ? DEFAULT_SCOPES.apple : DEFAULT_SCOPES.oidc)];
  const scopes = [...new Set(given)];
  if (type !== "github" && !scopes.includes("openid"))
    throw refuse("An OpenID connection must ask for the openid scope.", [{ field: "scopes", rule: "openid", message: "must include openid" }]);
  if (scopes.join(" ").length > SCOPES_MAX_LENGTH)
    throw refuse("The scopes are too long.", [{ field: "scopes", rule: "maxLength", message: `${SCOPES_MAX_LENGTH} characters at most, joined` }]);
  return scopes;
}

/** Lowercase, without repeats; null (or absent) for any domain. */
export function normalizeEmailDomains(given: readonly string[] | null | undefined): string[] | null {
  if (given === undefined || given === null) return null;
  return [...new Set(given.map((domain) => domain.toLowerCase()))];
}
