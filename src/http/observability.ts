/**
 * What an operator sees of each request: its route pattern in every log line of the request, its
 * duration in the request histogram, and GET /metrics (Prometheus text) behind METRICS_TOKEN.
 */
import type { FastifyBaseLogger, FastifyInstance } from "fastify";
import type { Bindings, ChildLoggerOptions, Logger } from "pino";
import type { Deps } from "../deps.js";
import { tenantDomainOf } from "./tenant.js";
import { AuthError } from "../errors.js";
import { constantTimeEqual } from "../security/hashing.js";
import { bearerToken } from "./routes/admin.js";

export const METRICS_PATH = "/metrics";

/** Label of requests that matched no route: the raw URL would be unbounded and may hold a token. */
const UNMATCHED_ROUTE = "unmatched";

type LevelName = "fatal" | "error" | "warn" | "info" | "debug" | "trace";

/**
 * A request's logger that becomes a pino child only when a line is written at an enabled level
 * (contract.md#issue-17). Making the child serialises its bindings through the redaction, whose wildcard paths
 * visit every key: 7 µs of a 50 µs session check, spent on every request for lines that
 * LOG_LEVEL=warn never writes. Lines that are written are the same as before.
 */
class LazyRequestLogger {
  #child: Logger | undefined;

  constructor(
    private readonly parent: Logger,
    /** Called once, when the child is made: the bindings (the tenant domain read from the headers) cost nothing until a line is written. */
    private readonly bindings: () => Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  get level(): string {
    return this.#child?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.child_().level = level;
  }

  fatal(...args: unknown[]): void {
    this.write("fatal", args);
  }
  error(...args: unknown[]): void {
    this.write("error", args);
  }
  warn(...args: unknown[]): void {
    this.write("warn", args);
  }
  info(...args: unknown[]): void {
    this.write("info", args);
  }
  debug(...args: unknown[]): void {
    this.write("debug", args);
  }
  trace(...args: unknown[]): void {
    this.write("trace", args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.child_().child(bindings, options);
  }

  private write(level: LevelName, args: unknown[]): void {
    if (this.#child === undefined && !this.parent.isLevelEnabled(level)) return;
    const child = this.child_();
    // pino's LogFn is overloaded, so no spread of unknown[] type-checks: the arguments go on as given.
    Reflect.apply(child[level], child, args);
  }

  private child_(): Logger {
    return (this.#child ??= this.parent.child(this.bindings(), this.options));
  }
}

/** Lazy unless the route sets its own level or serializers (none does today): then a child at once, as Fastify would. */
function requestLogger(parent: Logger, bindings: () => Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  const ownLevel = options.level !== undefined && options.level !== parent.level;
  if (ownLevel || options.serializers !== undefined) return parent.child(bindings(), options);
  return new LazyRequestLogger(parent, bindings, options);
}

/** Call before any route is registered: the route binding is set when each route is added. */
export function registerObservability(app: FastifyInstance, deps: Deps): void {
  // The pattern, and on /auth routes the requested tenant domain, go into the request's child
  // logger when Fastify creates it: no extra child and no re-serialised bindings per request (a
  // later setBindings showed in the session-check profile), and both are on the `incoming request`
  // line too. A pattern never holds a token (`/auth/verify-magic-link/:recordId/:token`); the URL
  // itself is masked by logging.ts.
  app.addHook("onRoute", (route) => {
    if (route.childLoggerFactory) return;
    const pattern = route.url ?? route.path;
    const tenantScoped = pattern.startsWith("/auth/");
    // The bindings are made when the first line is written, not per request (docs/performance.md#the-session-check).
    route.childLoggerFactory = (logger: FastifyBaseLogger, bindings, options, rawRequest) =>
      requestLogger(
        logger as Logger,
        () => (tenantScoped ? { ...bindings, route: pattern, tenant: tenantDomainOf(rawRequest) } : { ...bindings, route: pattern }),
        options,
      );
  });

  // Without METRICS_TOKEN there is no route, so /metrics answers 404 like any unknown path (as the
  // operator API does without its key), and with nobody able to read them no request is timed.
  const token = deps.config.metricsToken;
  if (token === undefined) return;

  app.addHook("onResponse", (request, reply, done) => {
    const route = request.routeOptions.url;
    // Scrapes are not traffic: counting them would make every scrape change what it reads.
    if (route !== METRICS_PATH) deps.metrics.observeRequest(route ?? UNMATCHED_ROUTE, request.method, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });

  app.get(
    METRICS_PATH,
    {
      onRequest: async (request) => {
        const presented = bearerToken(request.headers.authorization);
        if (presented === undefined || !constantTimeEqual(presented, token)) throw new AuthError("unauthorized");
      },
    },
    async (_request, reply) => {
      const body = await deps.metrics.render();
      return reply.type(deps.metrics.contentType).header("cache-control", "no-store").send(body);
    },
  );
}
