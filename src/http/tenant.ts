/**
 * Which tenant a request is for (contract.md#d2), the CSRF origin check, and the request context flows get.
 * Flows receive a Tenant and a RequestContext, never the request itself (STYLE habit 1).
 */
import type { IncomingHttpHeaders } from "node:http";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { applyCorsHeaders, isCorsOriginAllowed } from "./cors.js";
import type { Deps } from "../deps.js";
import { AuthError } from "../errors.js";
import type { RequestContext, Tenant } from "../model.js";

declare module "fastify" {
  interface FastifyRequest {
    tenant: Tenant;
  }
}

export const SESSION_COOKIE = "session_id";

/** X-Tenant-Domain, else Host without its port; lowercased. Takes a Fastify or a raw Node request. */
export function tenantDomainOf(request: { headers: IncomingHttpHeaders }): string {
  const header = request.headers["x-tenant-domain"];
  const raw = (typeof header === "string" && header !== "" ? header : (request.headers.host ?? "")).trim().toLowerCase();
  return raw.startsWith("[") ? raw.slice(0, raw.indexOf("]") + 1) : raw.replace(/:\d+$/, "");
}

export function contextOf(request: FastifyRequest): RequestContext {
  const userAgent = request.headers["user-agent"];
  return { ip: request.ip, userAgent: typeof userAgent === "string" ? userAgent : null };
}

/** Hosts a developer's own machine serves over plain http (dev mode's `localhost` tenant). */
const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/**
 * contract.md#d2: the tenant's own hostname (any port) over https, or over http only when it is a loopback
 * host, as for `allowedOrigins` (contract.md#d30: a page served over plain http can be rewritten by anyone on
 * its path); or one of its `allowedOrigins`. A malformed Origin is neither.
 */
export function isOriginAllowed(tenant: Tenant, origin: string): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  const host = url.hostname.toLowerCase();
  const secure = url.protocol === "https:" || (url.protocol === "http:" && LOOPBACK_HOSTS.has(host));
  return (host === tenant.domain && secure) || isCorsOriginAllowed(tenant, origin);
}

/** A request that carries the session cookie must come from the tenant's own origin or an allowed one. */
function assertOriginAllowed(request: FastifyRequest, tenant: Tenant): void {
  const origin = request.headers.origin;
  if (!origin || !request.cookies[SESSION_COOKIE]) return;
  if (!isOriginAllowed(tenant, origin)) throw new AuthError("origin_mismatch");
}

/**
 * Resolves the tenant for every route of the encapsulated scope it is registered in. `cors: false`
 * (the hosted pages) grants no CORS: pages are same-origin, and a listed origin must not read them.
 */
export function registerTenantResolution(app: FastifyInstance, deps: Deps, options: { cors?: boolean } = {}): void {
  const cors = options.cors ?? true;
  app.decorateRequest("tenant", null as unknown as Tenant);
  /** Sets the request's tenant and its CORS headers; what refuses the request, if anything. */
  const refusalOf = (request: FastifyRequest, reply: FastifyReply, tenant: Tenant | undefined): Error | undefined => {
    try {
      if (!tenant) throw new AuthError("unknown_tenant");
      request.tenant = tenant;
      // Preflights get their headers from their own route, once its checks pass.
      if (cors && request.method !== "OPTIONS") applyCorsHeaders(reply, tenant, request.headers.origin);
      assertOriginAllowed(request, tenant);
      return undefined;
    } catch (err) {
      return err as Error;
    }
  };
  // A callback hook: a tenant in the cache (nearly every request) is resolved without a promise or
  // a turn of the microtask queue; a miss reads the store (docs/performance.md#the-session-check).
  app.addHook("onRequest", (request, reply, done) => {
    const domain = tenantDomainOf(request);
    const cached = deps.tenantCache.cached(domain);
    if (cached) {
      done(refusalOf(request, reply, cached));
      return;
    }
    deps.tenantCache.findByDomain(domain).then((tenant) => done(refusalOf(request, reply, tenant)), done);
  });
}
