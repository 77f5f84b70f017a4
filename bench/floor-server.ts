/**
 * Framework floor: bare Fastify 5 + @fastify/cookie on the same Node, answering GET /auth/session
 * with a constant body. No store, no crypto: the most a session check can cost in Fastify alone,
 * to compare Latch's own /auth/session against.
 *
 *   [PORT=0] [HOST=127.0.0.1] node --import tsx bench/floor-server.ts
 *
 * Prints one line `listening http://HOST:PORT` when ready; SIGTERM closes the server, exits 0.
 */
import cookie from "@fastify/cookie";
import Fastify from "fastify";

const host = process.env.HOST ?? "127.0.0.1";
const port = Number(process.env.PORT ?? 0);

// forceCloseConnections: keep-alive clients (autocannon) must not hold close open on SIGTERM.
const app = Fastify({ logger: false, forceCloseConnections: true });
await app.register(cookie);

app.get("/auth/session", async (request, reply) => {
  if (request.cookies.session_id === undefined) return reply.code(401).send({ authorized: false });
  return { authorized: true };
});

await app.listen({ port, host });
const address = app.server.address();
if (!address || typeof address === "string") throw new Error("unexpected server address");

process.once("SIGTERM", () => {
  void app.close().then(() => process.exit(0));
});

console.log(`listening http://${host.includes(":") ? `[${host}]` : host}:${address.port}`);
