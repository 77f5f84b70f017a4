/** Liveness and readiness (the store migrated and answering, and Redis when configured) for load balancers and orchestrators; no tenant, no auth, no secrets. */
import type { FastifyPluginAsync } from "fastify";
import { Type } from "typebox";
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import { sendError } from "../errors.js";
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
    async (request, reply) => {
      // Not ready is a state, not a failure of this request: the readiness notice says so once
      // (docs/operations.md#readiness), and the 503 is sent without the error line of a failed request.
      const database = await probe(() => deps.store.isReady());
      deps.readiness.report("database", database.ready, database.err);
      const redis = deps.redis === undefined ? { ready: true } : await probe(() => deps.redis!.isReady());
      if (deps.redis !== undefined) deps.readiness.report("redis", redis.ready, redis.err);
      if (!database.ready || !redis.ready) return sendError(request, reply, new AuthError("unavailable"));
      return { status: "ready" as const };
    },
  );
};

async function probe(isReady: () => Promise<boolean>): Promise<{ ready: boolean; err?: unknown }> {
  try {
    return { ready: await isReady() };
  } catch (err) {
    return { ready: false, err };
  }
}
