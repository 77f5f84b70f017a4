/**
 * One error type with stable codes (contract.md#d4). Codes are a public contract: never rename one.
 * `message` is for people and is sent; `cause` is for operators and is only logged.
 */
import { EMAIL_INPUT_PATTERN } from "./core/email-address.js";

export const errorStatus = {
  validation_failed: 400,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unknown_tenant: 404,
  origin_mismatch: 403,
  bot_check_failed: 403,
  bot_check_unavailable: 503,
  invalid_token: 400,
  weak_password: 400,
  breached_password: 400,
  invalid_credentials: 401,
  email_not_verified: 403,
  account_locked: 403,
  password_change_required: 403,
  invalid_2fa_code: 401,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  invalid_state: 409,
  federation_failed: 400,
  rate_limited: 429,
  unavailable: 503,
  internal_error: 500,
} as const;

export type ErrorCode = keyof typeof errorStatus;

const defaultMessages: Record<ErrorCode, string> = {
  validation_failed: "The request is not valid.",
  payload_too_large: "The request body is too large.",
  unsupported_media_type: "The request body must be application/json.",
  unknown_tenant: "This site is not known to the authentication service.",
  origin_mismatch: "The request comes from an origin that is not allowed.",
  bot_check_failed: "Bot protection validation failed.",
  bot_check_unavailable: "Bot protection could not be checked right now. Please try again.",
  invalid_token: "This link is invalid or has expired.",
  weak_password: "The password does not meet the policy requirements.",
  breached_password: "This password has appeared in a data breach. Please choose another one.",
  invalid_credentials: "The email or password is incorrect.",
  email_not_verified: "Please verify your email address first.",
  account_locked: "This account has been locked.",
  password_change_required: "A password change is required. Please reset your password.",
  invalid_2fa_code: "The two-factor code is incorrect.",
  unauthorized: "Authentication is required.",
  forbidden: "This key is not valid for this tenant.",
  not_found: "Not found.",
  conflict: "This resource already exists.",
  invalid_state: "The account is not in a state that allows this.",
  federation_failed: "Signing in with the identity provider did not work. Please try again.",
  rate_limited: "Too many requests. Please try again later.",
  unavailable: "The service is temporarily unavailable. Please try again.",
  internal_error: "Something went wrong.",
};

/**
 * One problem with a request's input, the one shape of `details` on `validation_failed` (contract.md#issue-16):
 * `field` names the input (dotted for nested fields, `settings.botProtection.provider`; empty for
 * the input as a whole), `rule` the check that failed (a JSON Schema keyword such as `required` or
 * `maxLength`, or Latch's own such as `email`), `message` says it to a person.
 */
export interface ValidationIssue {
  field: string;
  rule: string;
  message: string;
}

/** `details` of an error body: the issues of `validation_failed`, or the failed rule names of `weak_password`. */
export type ErrorDetails = readonly ValidationIssue[] | readonly string[];

/** The issue a JSON Schema validator (ajv, TypeBox) reports: its pointer, keyword and params made into a field name. */
export function validationIssueOf(
  error: { instancePath: string; keyword: string; message?: string; params?: Record<string, unknown> },
  prefix = "",
): ValidationIssue {
  const names = error.instancePath
    .split("/")
    .slice(1)
    .map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"));
  const named = error.params?.missingProperty ?? error.params?.additionalProperty;
  if (typeof named === "string") names.push(named);
  return { field: [prefix, ...names].filter(Boolean).join("."), rule: error.keyword, message: error.message ?? "is not valid" };
}

type SchemaError = { instancePath: string; keyword: string; message?: string; params?: Record<string, unknown> };

/** A list of allowed values as a person reads it: `"1d", "7d"`. */
function listOfValues(values: readonly unknown[]): string {
  return values.map((value) => JSON.stringify(value)).join(", ");
}

/**
 * The literals a schema allows at a JSON pointer (a union of `const`s, or an `enum`), or undefined.
 * Walks `properties` and `items` only: enough for settings and request bodies, and a path it can't
 * follow just leaves the list to the errors themselves.
 */
function allowedLiteralsAt(schema: unknown, instancePath: string): unknown[] | undefined {
  let node = schema as { properties?: Record<string, unknown>; items?: unknown; anyOf?: unknown[]; enum?: unknown[] } | undefined;
  for (const part of instancePath.split("/").slice(1)) {
    const name = part.replace(/~1/g, "/").replace(/~0/g, "~");
    node = (node?.properties?.[name] ?? (node?.items !== undefined && /^[0-9]+$/.test(name) ? node.items : undefined)) as typeof node;
  }
  if (Array.isArray(node?.enum)) return node.enum;
  const branches = node?.anyOf;
  if (!Array.isArray(branches) || branches.length === 0) return undefined;
  if (!branches.every((branch) => typeof branch === "object" && branch !== null && "const" in branch)) return undefined;
  return branches.map((branch) => branch.const);
}

/**
 * Where a union of literals' errors start at `index`, how many there are: each refused literal is a
 * `const` error, after a `type` error of its own when the value is not even of the literal's type
 * (a number where strings are listed), and the union's `anyOf` ends them; all at one path. 0 when
 * no such run starts here.
 */
function literalRunLength(errors: readonly SchemaError[], index: number): number {
  const first = errors[index]!;
  const startsRun = first.keyword === "const" || (first.keyword === "type" && errors[index + 1]?.keyword === "const");
  if (!startsRun) return 0;
  let end = index;
  while (end < errors.length && errors[end]!.instancePath === first.instancePath && (errors[end]!.keyword === "const" || errors[end]!.keyword === "type"))
    end++;
  if (errors[end]?.instancePath === first.instancePath && errors[end]!.keyword === "anyOf") end++;
  return end - index;
}

/**
 * The issues of a JSON Schema validator's error list (ajv, TypeBox), said the way a person needs
 * (docs/operations.md#cli-settings-errors):
 * - a value out of a list says the list once. An `enum` names its values; a union of literals
 *   (`anyOf` of `const`s) reports each refused literal (each after a `type` error when the value's
 *   type is wrong) and then the `anyOf`: one issue (rule `enum`) naming them all, instead of "must
 *   be equal to constant" once per value. With `schema` the values come from it, since a
 *   validator's error cap (TypeBox's 8) may cut the list short; otherwise from the errors.
 * - an email refused by the pattern of the one email rule (core/email-address.ts) has rule `email`,
 *   as the flows' own check says it, not the pattern's text.
 * - a name `additionalProperties: false` refuses is one issue at that name (TypeBox says "schema is
 *   false" there, then "must not have additional properties" at its object).
 */
export function validationIssuesOf(errors: readonly SchemaError[], prefix = "", schema?: unknown): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const unknown = new Set<string>();
  for (let index = 0; index < errors.length;) {
    const error = errors[index]!;
    const run = literalRunLength(errors, index);
    if (run > 0) {
      const seen = errors.slice(index, index + run).flatMap((e) => (e.keyword === "const" ? [e.params?.allowedValue] : []));
      const allowed = allowedLiteralsAt(schema, error.instancePath) ?? seen;
      const issue = validationIssueOf(error, prefix);
      issues.push(
        allowed.length === 1
          ? { ...issue, rule: "const", message: `must be ${listOfValues(allowed)}` }
          : { ...issue, rule: "enum", message: `must be one of: ${listOfValues(allowed)}` },
      );
      index += run;
      continue;
    }
    const unknownNames = error.params?.additionalProperties;
    if (error.keyword === "boolean" && error.message === "schema is false") {
      // TypeBox reports a name `additionalProperties: false` refuses at the name itself, then again at its object.
      issues.push({ ...validationIssueOf(error, prefix), rule: "additionalProperties", message: "is not one of the names allowed here" });
      unknown.add(error.instancePath);
    } else if (
      error.keyword === "additionalProperties" &&
      Array.isArray(unknownNames) &&
      unknownNames.every((name) => unknown.has(`${error.instancePath}/${String(name)}`))
    ) {
      // each name was an issue of its own above
    } else if (error.keyword === "enum" && Array.isArray(error.params?.allowedValues)) {
      issues.push({ ...validationIssueOf(error, prefix), message: `must be one of: ${listOfValues(error.params.allowedValues)}` });
    } else if (error.keyword === "pattern" && error.params?.pattern === EMAIL_INPUT_PATTERN) {
      issues.push({ ...validationIssueOf(error, prefix), rule: "email", message: "must be an email address" });
    } else {
      issues.push(validationIssueOf(error, prefix));
    }
    index++;
  }
  return issues;
}

export interface AuthErrorOptions {
  message?: string;
  details?: ErrorDetails;
  /** Seconds, sent as Retry-After: with rate_limited, and with unavailable when trying again later helps (contract.md#d30). */
  retryAfterSeconds?: number;
  /** Internal cause: logged, never sent. */
  cause?: unknown;
  /**
   * Facts for the refused request's own log line (with its reqId, route and tenant), never sent:
   * which rule or lockout refused it. Names and counts only, never a secret or member input.
   */
  logFields?: Readonly<Record<string, string | number>>;
  /** The one status a code is sent with besides its own: 414 for `validation_failed` on an over-long path (contract.md#d21). */
  status?: 414;
}

export class AuthError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: ErrorDetails | undefined;
  readonly retryAfterSeconds: number | undefined;
  readonly logFields: Readonly<Record<string, string | number>> | undefined;

  constructor(code: ErrorCode, options: AuthErrorOptions = {}) {
    super(options.message ?? defaultMessages[code], { cause: options.cause });
    this.name = "AuthError";
    this.code = code;
    this.status = options.status ?? errorStatus[code];
    this.details = options.details;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.logFields = options.logFields;
  }
}

export function isAuthError(value: unknown): value is AuthError {
  return value instanceof AuthError;
}
