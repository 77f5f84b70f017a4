/**
 * One error handler (D4): every non-2xx answer is { success: false, code, message, requestId }.
 * Internal causes go to the log with the request id; 5xx details never reach the client.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { AuthError, type ErrorCode } from "../errors.js";

const fastifyCodes: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: "payload_too_large",
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "unsupported_media_type",
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: "validation_failed",
  FST_ERR_CTP_EMPTY_JSON_BODY: "validation_failed",
  FST_ERR_CTP_INVALID_JSON_BODY: "validation_failed",
};

/** Fastify's own errors (parsing, validation) mapped onto the catalogue. */
function toAuthError(error: FastifyError): AuthError {
  if (error instanceof AuthError) return error;
  if (error.validation) {
    const details = error.validation.map((v) => ({ path: `${error.validationContext ?? ""}${v.instancePath}`, message: v.message }));
    return new AuthError("validation_failed", { details });
  }
  const mapped = error.code ? fastifyCodes[error.code] : undefined;
  if (mapped) return new AuthError(mapped, { message: mapped === "validation_failed" ? "The request body is not valid JSON." : undefined });
  // Malformed JSON surfaces as a SyntaxError with status 400 from the JSON parser.
  if (error instanceof SyntaxError || error.statusCode === 400) return new AuthError("validation_failed", { message: "The request body is not valid JSON." });
  if (isStorageUnavailable(error)) return new AuthError("unavailable", { cause: error });
  return new AuthError("internal_error", { cause: error });
}

/** SQLite busy or I/O errors, PostgreSQL connection loss, statement timeout (57014), pool exhaustion, Redis unreachable. */
function isStorageUnavailable(error: { code?: string; message?: string }): boolean {
  if (typeof error.code === "string" && /^(SQLITE_BUSY|SQLITE_LOCKED|SQLITE_IOERR|SQLITE_CANTOPEN|SQLITE_FULL|REDIS_UNAVAILABLE|ECONNREFUSED|ECONNRESET|ETIMEDOUT|57014|57P0\d|53300|08\d{3})/.test(error.code)) return true;
  return /timeout exceeded when trying to connect|Connection terminated/i.test(error.message ?? "");
}

export function sendError(request: FastifyRequest, reply: FastifyReply, error: AuthError): FastifyReply {
  const body: Record<string, unknown> = { success: false, code: error.code, message: error.message, requestId: request.id };
  if (request.routeOptions.url === "/auth/login") body.authorized = false;
  if (error.details !== undefined) body.details = error.details;
  if (error.retryAfterSeconds !== undefined) void reply.header("retry-after", String(error.retryAfterSeconds));
  return reply.code(error.status).type("application/json; charset=utf-8").send(body);
}

/** A refusal that says which rule refused it, on the request's own line (so it carries its reqId). */
export function logRefusalFields(request: FastifyRequest, error: AuthError): void {
  if (error.logFields) request.log.info({ code: error.code, ...error.logFields }, "request refused");
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const authError = toAuthError(error);
    if (authError.status >= 500) {
      request.log.error({ err: error, code: authError.code }, "request failed");
    } else if (!(error instanceof AuthError)) {
      request.log.info({ code: authError.code, reason: error.code ?? error.message }, "request refused");
    } else {
      logRefusalFields(request, authError);
    }
    return sendError(request, reply, authError);
  });
  app.setNotFoundHandler((request, reply) => sendError(request, reply, new AuthError("not_found")));
}
