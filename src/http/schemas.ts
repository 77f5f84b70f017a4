/** Request and response schemas shared by routes. Lengths bound every string (D4 over-long). */
import { Type, type TSchema } from "typebox";
import { errorStatus, type ErrorCode } from "../errors.js";

export const EmailField = Type.String({ minLength: 1, maxLength: 320 });
export const NameField = Type.String({ minLength: 1, maxLength: 200 });
export const PasswordField = Type.String({ minLength: 1, maxLength: 256 });
export const TokenField = Type.String({ minLength: 1, maxLength: 128 });
/**
 * The longest value any path parameter's schema allows, a tenant domain (RFC 1035: 253): the
 * router's maxParamLength, so only a longer one is 414 (D21) and the schema speaks for the rest.
 */
export const MAX_PATH_PARAM_LENGTH = 253;
export const RecordIdField = Type.String({ minLength: 1, maxLength: 20 });
export const BotField = Type.Optional(Type.String({ maxLength: 4096 }));
export const TwoFactorCodeField = Type.Optional(Type.String({ minLength: 1, maxLength: 32 }));

/** Name of the D4 error body among the shared schemas (app.addSchema) and in the OpenAPI document. */
export const ERROR_BODY_ID = "ErrorBody";

/**
 * D4's error body, as http/errors.ts sendError writes it. Error responses refer to it by $id, so
 * it is serialised with this schema: `additionalProperties: true` keeps the serialiser from ever
 * dropping a field sendError adds.
 */
export const ErrorBody = Type.Object({
  success: Type.Literal(false),
  code: Type.Unsafe<ErrorCode>({ type: "string", enum: Object.keys(errorStatus), description: "Stable code for programs (DECISIONS D4); never renamed." }),
  message: Type.String({ description: "For people; the wording may change." }),
  requestId: Type.String({ description: "Also in the `x-request-id` header and in the log line of the request." }),
  authorized: Type.Optional(Type.Literal(false, { description: "Only on `/auth/login` answers (spec 4.2)." })),
  details: Type.Optional(Type.Unknown({ description: "`validation_failed`: what is wrong (its shape varies); `weak_password`: the failed rules." })),
}, { $id: ERROR_BODY_ID, additionalProperties: true, description: "The body of every non-2xx answer (DECISIONS D4)." });

export const MessageBody = Type.Object({ success: Type.Literal(true), message: Type.String() });

export const TenantHeaders = Type.Object({ "x-tenant-domain": Type.Optional(Type.String({ maxLength: 253 })) });

/**
 * `schema` with the description of the answer it documents (OpenAPI `responses.<status>.description`)
 * and, optionally, response headers. Validation and serialisation ignore both keywords.
 */
export function described<T extends TSchema>(schema: T, description: string, headers?: Record<string, TSchema>): T {
  return { ...schema, description, ...(headers ? { headers } : {}) };
}

export const Timestamp = Type.String({ format: "date-time", description: "ISO 8601 time." });
export const MemberStatusField = Type.Union([
  Type.Literal("Email Verification Pending"),
  Type.Literal("Unlocked"),
  Type.Literal("Locked"),
  Type.Literal("Password Change Pending"),
]);
/** A member as spec section 1 names its fields (D22 admin views, D24 `/auth/me`). */
export const memberIdentityFields = {
  recordid: Type.String(),
  email: Type.String(),
  name: Type.String(),
  authentication_status: MemberStatusField,
  authentication_type: Type.Array(Type.Union([Type.Literal("Password"), Type.Literal("Magic Link")])),
  _2fa_status: Type.Union([Type.Literal("Disabled"), Type.Literal("Enabled")]),
};
const Nullable = (description: string) => Type.Union([Type.String(), Type.Null()], { description });
/** A session as its member (D24) and the admin's export (D22) see it: never the cookie or its hash. */
export const SessionFields = {
  createdAt: Timestamp,
  lastSeenAt: described(Timestamp, "Updated at most once a minute."),
  expiresAt: Timestamp,
  ip: Nullable("The IP the session was opened from."),
  userAgent: Nullable("The browser's User-Agent when the session was opened (at most 512 characters)."),
  country: Nullable("ISO 3166 country of `ip` when GeoIP is configured."),
};
