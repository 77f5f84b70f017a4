/**
 * CORS for a tenant's `allowedOrigins` (contract.md#d1: extra origins "allowed to call it from a browser").
 *
 * Only origins the tenant listed, compared exactly, get `Access-Control-Allow-Origin` (never `*`,
 * since answers carry the session cookie's effects). The tenant of a cross-origin call is the one
 * `Host` names: a preflight can't carry `X-Tenant-Domain`'s value, so the header is not allowed
 * cross-origin and the preflight's tenant is the one that answers. `Authorization` is not allowed
 * either: the admin API key belongs on a server, not in a browser. Same-origin pages (the hosted
 * pages, or a tenant that proxies Latch on its own domain) need none of this.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { AuthError } from "../errors.js";
import type { Tenant } from "../model.js";
import { isUsableAllowedOrigin } from "../core/tenant-settings.js";

const PREFLIGHT_MAX_AGE_SECONDS = 600;
const ALLOWED_METHODS = ["GET", "POST", "PATCH", "DELETE"];

/** A listed origin that the rule of `allowedOrigins` allows: an http one stored before the rule is ignored. */
export function isCorsOriginAllowed(tenant: Tenant, origin: string): boolean {
  const wanted = origin.toLowerCase();
  return tenant.settings.allowedOrigins.includes(wanted) && isUsableAllowedOrigin(wanted);
}

/**
 * Called once the tenant is known. A tenant that lists origins answers with `Vary: Origin` always
 * (a shared cache must not hand one origin's answer to another); only a listed `Origin` gets the grant.
 */
export function applyCorsHeaders(reply: FastifyReply, tenant: Tenant, origin: string | undefined): void {
  if (tenant.settings.allowedOrigins.length === 0) return;
  void reply.header("vary", "Origin");
  if (origin === undefined || !isCorsOriginAllowed(tenant, origin)) return;
  grantOrigin(reply, origin);
}

function grantOrigin(reply: FastifyReply, origin: string): void {
  void reply.header("access-control-allow-origin", origin);
  void reply.header("access-control-allow-credentials", "true");
  void reply.header("access-control-expose-headers", "retry-after, x-request-id");
}

/** `OPTIONS /auth/*`: 204 for an allowed origin, method and headers; 403 `origin_mismatch` otherwise. */
export function registerCorsPreflight(app: FastifyInstance): void {
  app.options("/auth/*", { schema: { hide: true } }, async (request: FastifyRequest, reply: FastifyReply) => {
    const origin = request.headers.origin;
    const method = request.headers["access-control-request-method"];
    if (typeof origin !== "string" || !isCorsOriginAllowed(request.tenant, origin)) throw new AuthError("origin_mismatch");
    if (typeof method !== "string" || !ALLOWED_METHODS.includes(method.toUpperCase()))
      throw new AuthError("origin_mismatch", { message: "This method is not allowed from another origin." });
    const asked = request.headers["access-control-request-headers"];
    const headers =
      typeof asked === "string"
        ? asked
            .split(",")
            .map((h) => h.trim().toLowerCase())
            .filter(Boolean)
        : [];
    if (headers.some((h) => h !== "content-type")) throw new AuthError("origin_mismatch", { message: "Only Content-Type may be sent from another origin." });
    grantOrigin(reply, origin);
    void reply.header("vary", "Origin");
    void reply.header("access-control-allow-methods", ALLOWED_METHODS.join(", "));
    void reply.header("access-control-allow-headers", "Content-Type");
    void reply.header("access-control-max-age", String(PREFLIGHT_MAX_AGE_SECONDS));
    return reply.code(204).send();
  });
}
