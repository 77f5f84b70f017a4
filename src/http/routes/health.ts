/** Liveness and readiness (the store migrated and answering, and Redis when configured) for load balancers and orchestrators; no tenant, no auth, no secrets. */
import type { FastifyPluginAsync } from "fastify";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import { errorResponses } from "../openapi.js";
import { described } from "../schemas.js";

export const healthRoutes: FastifyPluginAsync<{ deps: Deps }> = async (app, { deps }) => {
  app.get(
    "/healthz",
    {
      schema: {
        summary: "Liveness",
        description: "Always `ok` while the process serves requests.",
        tags: ["health"],
        operationId: "checkLiveness",
        response: { 200: described(Type.Object({ status: Type.Literal("ok") }), "The process is up.") },
      },
    },
    async () => ({ status: "ok" }),
  );
  app.get(
    "/readyz",
    {
      schema: {
        summary: "Readiness",
        description: "Ready when the database answers and every migration has run, and Redis answers when `REDIS_URL` is set.",
        tags: ["health"],
        operationId: "checkReadiness",
        response: { 200: described(Type.Object({ status: Type.Literal("ready") }), "Ready for traffic."), ...errorResponses() },
      },
    },
    async (request) => {
      let ready = false;
      try {
        ready = (await deps.store.isReady()) && (deps.redis === undefined || (await deps.redis.isReady()));
      } catch (err) {
        request.log.warn({ err }, "readiness check failed");
      }
      if (!ready) throw new AuthError("unavailable");
      return { status: "ready" };
    },
  );
};
