/**
 * A TCP proxy a test puts between Latch and PostgreSQL or Redis, to cut the connection:
 * "refuse" stops listening (connection refused), "blackhole" accepts and never answers.
 */
import { createServer, connect, type Server, type Socket } from "node:net";

type Mode = "forward" | "refuse" | "blackhole";

export class TcpProxy {
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
