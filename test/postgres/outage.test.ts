/**
 * Issue 5: with PostgreSQL unreachable, requests get 503 unavailable within the statement timeout,
 * the process stays up, nothing is half-written, and service resumes by itself. The test cuts a
 * TCP proxy it runs between Latch and the server: refused connections, then a black hole.
 */
import assert from "node:assert/strict";
import { createServer, connect, type Server, type Socket } from "node:net";
import { test } from "node:test";
import { createHarness, get, post, STRONG_PASSWORD } from "../support/harness.js";
import { createTestSchema } from "../support/postgres.js";

type Mode = "forward" | "refuse" | "blackhole";

class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  mode: Mode = "forward";
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async listen(): Promise<void> {
    this.server = createServer((client) => {
      this.sockets.add(client);
      client.on("close", () => this.sockets.delete(client));
      client.on("error", () => undefined);
      if (this.mode === "blackhole") return; // accept and never answer
      const upstream = connect(this.target.port, this.target.host);
      this.sockets.add(upstream);
      upstream.on("close", () => this.sockets.delete(upstream));
      upstream.on("error", () => client.destroy());
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, "127.0.0.1", resolve));
    const address = this.server.address();
    if (address && typeof address !== "string") this.port = address.port;
  }

  /** Drops every open connection; "refuse" also stops listening. */
  async cut(mode: Exclude<Mode, "forward">): Promise<void> {
    this.mode = mode;
    for (const socket of this.sockets) socket.destroy();
    if (mode === "refuse") await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }

  async restore(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    this.mode = "forward";
    if (!this.server?.listening) await this.listen();
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    if (this.server?.listening) await new Promise<void>((resolve) => this.server!.close(() => resolve()));
  }
}

test("PostgreSQL outage: 503 unavailable, nothing half-written, recovery without a restart", async (t) => {
  const schema = await createTestSchema();
  const direct = new URL(schema.url);
  const proxy = new TcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
  await proxy.listen();
  t.after(() => proxy.close());
  const proxied = new URL(schema.url);
  proxied.port = String(proxy.port);
  const h = await createHarness({ env: { DATABASE_URL: proxied.toString(), DATABASE_STATEMENT_TIMEOUT_MS: "1000" } });
  t.after(() => h.close());
  const register = (email: string, ip: string) => post(h, "/auth/register-password", { email, name: "O", password: STRONG_PASSWORD, "bot-challenge-response": "x" }, { ip });

  assert.equal((await register("before@example.org", "198.51.100.1")).statusCode, 200);

  for (const mode of ["refuse", "blackhole"] as const) {
    await proxy.cut(mode);
    const during = await register(`during-${mode}@example.org`, "198.51.100.2");
    assert.equal(during.statusCode, 503, `${mode}: ${during.body}`);
    assert.equal(during.json().code, "unavailable");
    assert.equal((await get(h, "/readyz")).statusCode, 503, `${mode}: readiness reports the outage`);
    assert.equal((await get(h, "/healthz")).statusCode, 200, `${mode}: the process is alive`);
    await proxy.restore();
  }

  // Service resumes by itself, and the refused registrations wrote nothing.
  assert.equal((await get(h, "/readyz")).statusCode, 200);
  assert.equal((await register("after@example.org", "198.51.100.3")).statusCode, 200);
  const emails = (await h.db.selectFrom("members").select("email").orderBy("email").execute()).map((r) => r.email);
  assert.deepEqual(emails, ["after@example.org", "before@example.org"]);
  assert.ok(h.logs.some((l) => l.includes('"code":"unavailable"') || l.includes("unavailable")), "the outage is logged");
});
