/** Liveness and readiness (the store migrated and answering, and Redis when configured) for load balancers and orchestrators; no tenant, no auth, no secrets. */
import type { FastifyPluginAsync } from "fastify";
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";

export const healthRoutes: FastifyPluginAsync<{ deps: Deps }> = async (app, { deps }) => {
  app.get("/healthz", async () => ({ status: "ok" }));
  app.get("/readyz", async (request) => {
    let ready = false;
    try {
      ready = (await deps.store.isReady()) && (deps.redis === undefined || (await deps.redis.isReady()));
    } catch (err) {
      request.log.warn({ err }, "readiness check failed");
    }
    if (!ready) throw new AuthError("unavailable");
    return { status: "ready" };
  });
};
