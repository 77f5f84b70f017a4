/**
 * One error handler (contract.md#d4): every non-2xx answer is { success: false, code, message, requestId }.
 * Internal causes go to the log with the request id; 5xx details never reach the client.
 */
import { ServerResponse, type IncomingMessage, type Server } from "node:http";
import type { Socket } from "node:net";
import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { AuthError, validationIssuesOf, type ErrorCode } from "../errors.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** What a route's error bodies carry besides the usual fields (contract.md#spec-4-2: login's `authorized: false`). */
    errorBodyFields?: Record<string, unknown>;
  }
}

const fastifyCodes: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: "payload_too_large",
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "unsupported_media_type",
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: "validation_failed",
  FST_ERR_CTP_EMPTY_JSON_BODY: "validation_failed",
  FST_ERR_CTP_INVALID_JSON_BODY: "validation_failed",
  // @fastify/static refuses a path that leaves its root (`/docs/static/../../package.json`): to a
  // client that is a file that does not exist, not a 403 saying something is there.
  FST_STATIC_FORBIDDEN_PATH: "not_found",
};

/** Fastify's own errors (parsing, validation) mapped onto the catalogue. */
function toAuthError(error: FastifyError): AuthError {
  if (error instanceof AuthError) return error;
  if (error.validation) {
    // Named as the client sent them: a body field by its name, a query or path parameter by its own.
    const details = validationIssuesOf(error.validation);
    return new AuthError("validation_failed", { details });
  }
  const mapped = error.code ? fastifyCodes[error.code] : undefined;
  if (mapped === "validation_failed") return new AuthError(mapped, { message: "The request body is not valid JSON." });
  if (mapped) return new AuthError(mapped);
  // Malformed JSON surfaces as a SyntaxError with status 400 from the JSON parser.
  if (error instanceof SyntaxError || error.statusCode === 400) return new AuthError("validation_failed", { message: "The request body is not valid JSON." });
  if (isStorageUnavailable(error)) return new AuthError("unavailable", { cause: error });
  // A plugin's own client error we have not named: still the client's fault, never a 500. A 403
  // is @fastify/static refusing a path out of its root (9.3 sends `send`'s plain 403, without
  // FST_STATIC_FORBIDDEN_PATH): to a client, a file that does not exist.
  if (typeof error.statusCode === "number" && error.statusCode >= 400 && error.statusCode < 500) {
    return new AuthError(error.statusCode === 404 || error.statusCode === 403 ? "not_found" : "validation_failed");
  }
  return new AuthError("internal_error", { cause: error });
}

/** SQLite busy or I/O errors, PostgreSQL connection loss, statement timeout (57014), deadlock or serialisation failure (40P01, 40001: try again), pool exhaustion, Redis unreachable. */
export function isStorageUnavailable(error: { code?: string; message?: string }): boolean {
  if (
    typeof error.code === "string" &&
    /^(SQLITE_BUSY|SQLITE_LOCKED|SQLITE_IOERR|SQLITE_CANTOPEN|SQLITE_FULL|REDIS_UNAVAILABLE|ECONNREFUSED|ECONNRESET|ETIMEDOUT|57014|57P0\d|53300|08\d{3}|40P01|40001)/.test(
      error.code,
    )
  )
    return true;
  return /timeout exceeded when trying to connect|Connection terminated/i.test(error.message ?? "");
}

export function sendError(request: FastifyRequest, reply: FastifyReply, error: AuthError): FastifyReply {
  const body: Record<string, unknown> = { success: false, code: error.code, message: error.message, requestId: request.id };
  Object.assign(body, request.routeOptions.config?.errorBodyFields);
  if (error.details !== undefined) body.details = error.details;
  if (error.retryAfterSeconds !== undefined) void reply.header("retry-after", String(error.retryAfterSeconds));
  // Also for answers no onRequest hook saw (the router's own refusals, contract.md#d21).
  void reply.header("x-request-id", request.id);
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
  app.setNotFoundHandler((request, reply) => {
    request.log.info({ code: "not_found" }, "no route");
    return sendError(request, reply, new AuthError("not_found"));
  });
}

/**
 * Fastify's `frameworkErrors`: what the router refuses before any route runs (contract.md#d21). A malformed URL
 * (`/%`) is 400 and a path parameter longer than `maxParamLength` is 414, both `validation_failed`
 * in the contract.md#d4 body with the request's id, and logged. The URL is in the request's own log line,
 * masked there; Fastify's error message holds it raw, so the message is never logged or sent.
 */
export function handleFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const authError =
    error.code === "FST_ERR_MAX_PARAM_LENGTH"
      ? new AuthError("validation_failed", { status: 414, message: "A part of the path is longer than any valid value." })
      : error.code === "FST_ERR_BAD_URL"
        ? new AuthError("validation_failed", { message: "The URL is not valid." })
        : new AuthError("internal_error");
  request.log.info({ code: authError.code, reason: error.code }, "request refused");
  void sendError(request, reply, authError); // the reply is sent; Fastify ignores what this hook returns
}

/**
 * Fastify's `clientErrorHandler`: requests Node's HTTP parser refuses before Fastify sees them (a
 * request line or headers over the size limit, broken HTTP). Same contract.md#d4 body and a request id of the
 * same series; the raw packet (which may hold a cookie or a token) is never logged.
 */
export function clientErrorHandler(log: FastifyBaseLogger, nextRequestId: () => string) {
  return (error: Error & { code?: string }, socket: Socket): void => {
    if (error.code === "ECONNRESET" || socket.destroyed) return;
    const requestId = nextRequestId();
    const [status, reason, message] =
      error.code === "HPE_HEADER_OVERFLOW"
        ? [431, "Request Header Fields Too Large", "The request line or headers are too long."]
        : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
          ? [408, "Request Timeout", "The request did not arrive in time."]
          : [400, "Bad Request", "The request is not valid HTTP."];
    log.info({ reqId: requestId, code: "validation_failed", reason: error.code ?? "client_error", status }, "request refused");
    if (socket.writable) {
      const body = JSON.stringify({ success: false, code: "validation_failed", message, requestId });
      socket.write(
        `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
          `x-request-id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy();
  };
}

/**
 * contract.md#d30: every method gets an HTTP answer, CONNECT included. Node gives a CONNECT (a request to open
 * a tunnel) to the server's `connect` listeners with the bare socket, and with none it closes the
 * socket unanswered. Latch tunnels nothing, so a CONNECT is routed like any other request: no route
 * takes it, so it is the 404 `not_found` of contract.md#d21 with the contract.md#d4 body, its request id and its log lines,
 * as TRACE or an unknown path is. The answer closes the connection (the socket has left Node's
 * HTTP parser, so nothing more can be read from it as HTTP).
 */
export function answerConnectRequests(server: Server): void {
  server.on("connect", (request: IncomingMessage, socket: Socket) => {
    // Node took its own error and timeout listeners off the socket when it handed it over.
    socket.on("error", () => socket.destroy());
    const response = new ServerResponse(request);
    response.shouldKeepAlive = false;
    response.assignSocket(socket);
    response.on("finish", () => {
      response.detachSocket(socket);
      socket.destroySoon();
    });
    server.emit("request", request, response);
  });
}
