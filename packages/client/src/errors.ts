/**
 * LatchError: every failure of a call, with the API's stable code (contract.md#d4). The message is
 * the server's (for people) or one of ours; it never holds a response body, a URL or a secret.
 */

/** The service's error codes (src/errors.ts, kept equal by test/client-types.test.ts) plus the SDK's own. */
export const LATCH_ERROR_CODES = [
  "validation_failed",
  "payload_too_large",
  "unsupported_media_type",
  "unknown_tenant",
  "origin_mismatch",
  "bot_check_failed",
  "bot_check_unavailable",
  "invalid_token",
  "weak_password",
  "breached_password",
  "invalid_credentials",
  "email_not_verified",
  "account_locked",
  "password_change_required",
  "invalid_2fa_code",
  "unauthorized",
  "forbidden",
  "not_found",
  "conflict",
  "invalid_state",
  "federation_failed",
  "rate_limited",
  "unavailable",
  "internal_error",
  // The service could not be reached at all (fetch rejected): status 0.
  "network_error",
] as const;

export type LatchErrorCode = (typeof LATCH_ERROR_CODES)[number];

export interface LatchErrorInit {
  code: LatchErrorCode;
  status: number;
  message: string;
  requestId?: string;
  details?: unknown;
  retryAfterSeconds?: number;
}

/**
 * Marks a LatchError of any copy of this package. Node can load two, the ES module (import) and the
 * CommonJS build (require), each with its own class; the mark, a registered symbol both share, lets
 * `instanceof` and isLatchError accept an error from either.
 */
const LATCH_ERROR_MARK = Symbol.for("@latch/client.LatchError");

export class LatchError extends Error {
  readonly code: LatchErrorCode;
  /** HTTP status; 0 for network_error. */
  readonly status: number;
  /** The service's request id (body or `x-request-id`): quote it when reporting a problem. */
  readonly requestId?: string;
  /** `validation_failed`: what is wrong; `weak_password`: the failed rules. */
  readonly details?: unknown;
  /** Seconds to wait, from `Retry-After` (rate_limited). */
  readonly retryAfterSeconds?: number;

  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === "object" && value !== null && (value as { [LATCH_ERROR_MARK]?: unknown })[LATCH_ERROR_MARK] === true;
  }

  constructor(init: LatchErrorInit) {
    super(init.message);
    Object.defineProperty(this, LATCH_ERROR_MARK, { value: true });
    this.name = "LatchError";
    this.code = init.code;
    this.status = init.status;
    if (init.requestId !== undefined) this.requestId = init.requestId;
    if (init.details !== undefined) this.details = init.details;
    if (init.retryAfterSeconds !== undefined) this.retryAfterSeconds = init.retryAfterSeconds;
  }
}

/** True for a LatchError, and with `code`, only for one with that code. */
export function isLatchError(value: unknown, code?: LatchErrorCode): value is LatchError {
  return value instanceof LatchError && (code === undefined || value.code === code);
}

const knownCodes: ReadonlySet<string> = new Set(LATCH_ERROR_CODES);

/** For answers without a contract.md#d4 body (a proxy's 502 page, say): a code from the status alone. */
const codeByStatus: Record<number, LatchErrorCode> = {
  400: "validation_failed",
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  409: "conflict",
  413: "payload_too_large",
  415: "unsupported_media_type",
  429: "rate_limited",
  // A proxy in front of Latch that can't reach it: worth a retry, like Latch's own 503.
  502: "unavailable",
  503: "unavailable",
  504: "unavailable",
};

function fallbackCode(status: number): LatchErrorCode {
  return codeByStatus[status] ?? "internal_error";
}

function parseRetryAfter(header: string | null): number | undefined {
  if (header === null || !/^\s*\d{1,9}\s*$/.test(header)) return undefined;
  return Number(header);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The LatchError for a non-2xx answer whose body text is `text` (JSON or not). */
export function errorFromResponse(response: Response, text: string): LatchError {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const retryAfterSeconds = parseRetryAfter(response.headers.get("retry-after"));
  const headerRequestId = response.headers.get("x-request-id") ?? undefined;
  if (isRecord(body) && body.success === false && typeof body.code === "string" && typeof body.message === "string") {
    return new LatchError({
      // A code newer than this SDK: the status decides, the server's message and details stay.
      code: knownCodes.has(body.code) ? (body.code as LatchErrorCode) : fallbackCode(response.status),
      status: response.status,
      message: body.message,
      requestId: typeof body.requestId === "string" ? body.requestId : headerRequestId,
      details: body.details,
      retryAfterSeconds,
    });
  }
  // Not a contract.md#d4 body: only the status is trusted, and the body (an HTML page, a stack trace) is not repeated.
  return new LatchError({
    code: fallbackCode(response.status),
    status: response.status,
    message: `The authentication service answered with HTTP ${response.status}.`,
    requestId: headerRequestId,
    retryAfterSeconds,
  });
}

/** fetch rejected: no answer at all. The original error is not kept: its text can name the URL, which holds a magic-link token. */
export function networkError(): LatchError {
  return new LatchError({ code: "network_error", status: 0, message: "The authentication service could not be reached." });
}
