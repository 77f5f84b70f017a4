/** Request and response schemas shared by routes. Lengths bound every string (contract.md#d4 over-long). */
import { Type } from "typebox";
import { errorStatus, type ErrorCode } from "../errors.js";
import { AUDIT_EVENT_TYPES, MemberStatus } from "../model.js";
import { described, StringEnum, Timestamp } from "../core/schema.js";
import { EMAIL_FIELD_MAX_LENGTH, EmailAddress, EmailInput } from "../core/email-address.js";
import {
  describeDurationAfterA,
  LAST_SEEN_RESOLUTION_MS,
  LOGIN_CODE_DIGITS,
  NAME_MAX_LENGTH,
  PASSWORD_MAX_LENGTH,
  SESSION_USER_AGENT_MAX_LENGTH,
  TENANT_DOMAIN_MAX_LENGTH,
} from "../rules.js";
import { PASSWORD_RULES } from "../security/password.js";

export { described, EMAIL_FIELD_MAX_LENGTH, EmailAddress, StringEnum, Timestamp };

/** An email a client sends: the one email rule's pattern (decisions.md#one-email-rule-issue-29), checked here and by the flow. */
export const EmailField = EmailInput;
/**
 * A member's name: at most NAME_MAX_LENGTH characters as sent (JSON Schema and ajv count code points,
 * as the flow does), and something besides whitespace. The flow trims it and refuses control and
 * invisible formatting characters (security/identity.ts normalizeName), which the description says.
 */
export const NameField = Type.String({
  minLength: 1,
  maxLength: NAME_MAX_LENGTH,
  pattern: String.raw`\S`,
  description: `1 to ${NAME_MAX_LENGTH} characters, surrounding whitespace included (it is trimmed before the name is stored); no control or invisible formatting characters (Unicode Cc, Cf).`,
});
export const PasswordField = Type.String({ minLength: 1, maxLength: PASSWORD_MAX_LENGTH });
export const TokenField = Type.String({ minLength: 1, maxLength: 128 });
export const RecordIdField = Type.String({ minLength: 1, maxLength: 20 });
export const BotField = Type.Optional(
  Type.String({
    maxLength: 4096,
    description:
      "The answer of the tenant's bot-protection widget: with ALTCHA (the default), the widget's base64 payload for a challenge from `GET /auth/bot-challenge`; with Turnstile, hCaptcha or reCAPTCHA, the widget's response token. Used once. Leave it out only when the tenant's provider is `none`; otherwise a missing or failed one answers 403 `bot_check_failed`.",
  }),
);
/** A second-factor code as typed: a TOTP code or a recovery code, with the spaces and dashes a person adds. */
export const SecondFactorCodeField = Type.String({ minLength: 1, maxLength: 32 });
export const TwoFactorCodeField = Type.Optional(SecondFactorCodeField);
/** contract.md#d26: an emailed login code, as an HTML `pattern` (anchored by the browser): its digits, leading zeros kept. */
export const LOGIN_CODE_PATTERN = `[0-9]{${LOGIN_CODE_DIGITS}}`;
/** The public id of a member's session or passkey (never the cookie or the credential id). */
export const PublicIdField = Type.String({ minLength: 1, maxLength: 64 });

/** Name of the contract.md#d4 error body among the shared schemas (app.addSchema) and in the OpenAPI document. */
export const ERROR_BODY_ID = "ErrorBody";
export const ERROR_DETAILS_ID = "ErrorDetails";

/** errors.ts ValidationIssue: the one shape of a `validation_failed` detail (contract.md#issue-16). */
const ValidationIssueSchema = Type.Object(
  {
    field: Type.String({
      description:
        "The input at fault: a body field, query or path parameter by its name, dotted when nested (`settings.botProtection.provider`); empty for the input as a whole.",
    }),
    rule: Type.String({
      description:
        "The check that failed: a JSON Schema keyword (`required`, `type`, `maxLength`, `pattern`, `anyOf`…) or one of Latch's own (`email`, `name`, `cursor`, `hostname`, `equals_domain`…).",
    }),
    message: Type.String({ description: "For people; the wording may change." }),
  },
  { description: "One problem with the request's input." },
);

/**
 * `details` of the contract.md#d4 body, one schema for every error answer: what `validation_failed` found, or
 * the failed rules of `weak_password`. Typed as errors.ts ErrorDetails, so the serialiser never
 * meets another shape.
 */
export const ErrorDetails = Type.Union(
  [
    Type.Array(ValidationIssueSchema, { minItems: 1, description: "`validation_failed`: what is wrong." }),
    Type.Array(StringEnum(PASSWORD_RULES), { minItems: 1, description: "`weak_password`: the failed password rules (README, password policy)." }),
  ],
  { $id: ERROR_DETAILS_ID, description: "With `validation_failed` and `weak_password` only." },
);

/**
 * contract.md#d4's error body, as http/errors.ts sendError writes it. Error responses refer to it by $id, so
 * it is serialised with this schema: `additionalProperties: true` keeps the serialiser from ever
 * dropping a field sendError adds.
 */
export const ErrorBody = Type.Object(
  {
    success: Type.Literal(false),
    code: Type.Unsafe<ErrorCode>({ type: "string", enum: Object.keys(errorStatus), description: "Stable code for programs; never renamed." }),
    message: Type.String({ description: "For people; the wording may change." }),
    requestId: Type.String({ description: "Also in the `x-request-id` header and in the log line of the request." }),
    authorized: Type.Optional(Type.Literal(false, { description: "Only on `/auth/login` answers." })),
    details: Type.Optional(Type.Ref(ERROR_DETAILS_ID)),
  },
  { $id: ERROR_BODY_ID, additionalProperties: true, description: "The body of every non-2xx answer." },
);

export const MessageBody = Type.Object({ success: Type.Literal(true), message: Type.String() });

/**
 * The body of a POST that needs none (logout, 2FA setup, …): leave it out, or send any JSON object;
 * it is ignored. Fastify validates a missing body as `null`; openapi.ts marks these bodies optional.
 */
export const NoBodyNeeded = Type.Union([Type.Object({}), Type.Null()], { description: "Not needed: send no body, or any JSON object (ignored)." });

/**
 * A `limit` query parameter: digits, coerced to an integer (http/validation.ts). Values past the
 * page size are clamped by the flow, not refused (test/member-admin.test.ts), so the bound is the
 * three digits the parameter always allowed.
 */
export function LimitQueryField(defaultSize: number, maxSize: number, what: string) {
  return Type.Integer({ minimum: 0, maximum: 999, description: `${what} per page: ${defaultSize} by default; kept within 1–${maxSize}.` });
}

/** An audit event's `type`: one of model.ts AUDIT_EVENT_TYPES, as the document's `enum` and the SDK's union. */
export const AuditEventTypeField = StringEnum(AUDIT_EVENT_TYPES, { description: "What happened (`src/model.ts` AUDIT_EVENT_TYPES)." });

/**
 * A member's `authentication_status` as an `enum` (the admin's `StatusBody`). memberIdentityFields'
 * MemberStatusField is the same four values as `anyOf`; one form for both would change the document.
 */
export const MemberStatusEnumField = StringEnum(Object.values(MemberStatus));

export const TenantHeaders = Type.Object({ "x-tenant-domain": Type.Optional(Type.String({ maxLength: TENANT_DOMAIN_MAX_LENGTH })) });

export const MemberStatusField = Type.Union([
  Type.Literal("Email Verification Pending"),
  Type.Literal("Unlocked"),
  Type.Literal("Locked"),
  Type.Literal("Password Change Pending"),
]);
export const TwoFactorStatusField = Type.Union([Type.Literal("Disabled"), Type.Literal("Enabled")]);
/** A member as contract.md#spec-1 names its fields (contract.md#d22 admin views, contract.md#d24 `/auth/me`). */
export const memberIdentityFields = {
  recordid: Type.String(),
  email: EmailAddress(),
  name: Type.String(),
  authentication_status: MemberStatusField,
  authentication_type: Type.Array(Type.Union([Type.Literal("Password"), Type.Literal("Magic Link"), Type.Literal("Federated")])),
  _2fa_status: TwoFactorStatusField,
};
const Nullable = (description: string) => Type.Union([Type.String(), Type.Null()], { description });
/** A session as its member (contract.md#d24) and the admin's export (contract.md#d22) see it: never the cookie or its hash. */
export const SessionFields = {
  createdAt: Timestamp,
  lastSeenAt: described(Timestamp, `Updated at most once ${describeDurationAfterA(LAST_SEEN_RESOLUTION_MS)}.`),
  expiresAt: Timestamp,
  ip: Nullable("The IP the session was opened from."),
  userAgent: Nullable(`The browser's User-Agent when the session was opened (at most ${SESSION_USER_AGENT_MAX_LENGTH} characters).`),
  country: Nullable("ISO 3166 country of `ip` when GeoIP is configured."),
};
