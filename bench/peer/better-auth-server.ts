/**
 * Benchmark peer: Better Auth on SQLite, served by node:http, configured to pay the same costs
 * as Latch (Argon2id m=19456 t=2 p=1, WAL SQLite, no rate limiter, no session cookie cache) so
 * the two can be load-tested side by side. See README.md here.
 *
 *   BENCH_DB_FILE=/tmp/peer.db [PORT=0] [HOST=127.0.0.1] node --import tsx bench/peer/better-auth-server.ts
 *
 * Prints one line `listening http://HOST:PORT` when ready; SIGTERM closes server and DB, exits 0.
 */
import { availableParallelism } from "node:os";

// Argon2 runs on libuv's pool. Caveat: in an ESM entry Node has usually started the pool already
// (the module loader reads files through it), so this only takes effect if the launcher also puts
// UV_THREADPOOL_SIZE in the child's environment; check.ts does, and the harness must too.
process.env.UV_THREADPOOL_SIZE ??= String(Math.max(4, availableParallelism()));

const { randomBytes } = await import("node:crypto");
const { createServer } = await import("node:http");
const { hash, verify } = await import("@node-rs/argon2");
const { default: Database } = await import("better-sqlite3");
const { betterAuth } = await import("better-auth");
const { getMigrations } = await import("better-auth/db/migration");
const { toNodeHandler } = await import("better-auth/node");
type BetterAuthOptions = import("better-auth").BetterAuthOptions;

// The binding Latch hashes with (src/security/password.ts), so both pay the same hash cost; 2 is Argon2id
// (the binding's `const enum`, which isolated modules can't read).
const ARGON2 = { algorithm: 2 as import("@node-rs/argon2").Algorithm, memoryCost: 19456, timeCost: 2, parallelism: 1 };
const SALT_BYTES = 32; // as Latch (src/security/password.ts)
const BASE_PATH = "/api/auth";

const dbFile = process.env.BENCH_DB_FILE;
if (!dbFile) {
  console.error("BENCH_DB_FILE is required");
  process.exit(2);
}
const host = process.env.HOST ?? "127.0.0.1";
const port = Number(process.env.PORT ?? 0);

// Same pragmas as Latch's SQLite store (src/store/dialects.ts).
const sqlite = new Database(dbFile);
sqlite.pragma("journal_mode = WAL");
sqlite.pragma("synchronous = FULL");
sqlite.pragma("foreign_keys = ON");
sqlite.pragma("busy_timeout = 5000");

// Listen first so baseURL can name the real (possibly random) port; answer 503 until ready.
const server = createServer((_req, res) => res.writeHead(503).end());
await new Promise<void>((resolve, reject) => {
  server.once("error", reject);
  server.listen(port, host, resolve);
});
const address = server.address();
if (!address || typeof address === "string") throw new Error("unexpected server address");
const origin = `http://${host.includes(":") ? `[${host}]` : host}:${address.port}`;

const options: BetterAuthOptions = {
  database: sqlite,
  baseURL: origin,
  basePath: BASE_PATH,
  secret: "latch-bench-peer-fixed-secret-0123456789abcdef",
  emailAndPassword: {
    enabled: true,
    requireEmailVerification: false,
    password: {
      hash: (password) => hash(password, { ...ARGON2, salt: randomBytes(SALT_BYTES) }),
      verify: ({ hash: phc, password }) => verify(phc, password).catch(() => false),
    },
  },
  rateLimit: { enabled: false },
  session: { cookieCache: { enabled: false } },
  telemetry: { enabled: false },
  logger: { level: "error" },
  // Better Auth rejects a POST that carries Sec-Fetch-* headers (Node's fetch always sends
  // `sec-fetch-mode: cors`) or a Cookie but no Origin (403 MISSING_OR_NULL_ORIGIN). Off, so any
  // server-to-server client works without an Origin header. Bench only.
  advanced: { disableCSRFCheck: true },
};

const { runMigrations } = await getMigrations(options);
await runMigrations();
const handle = toNodeHandler(betterAuth(options));
server.removeAllListeners("request");
server.on("request", (req, res) => {
  if (req.url?.startsWith(`${BASE_PATH}/`)) void handle(req, res);
  else res.writeHead(404).end();
});

process.once("SIGTERM", () => {
  server.close(() => {
    sqlite.close();
    process.exit(0);
  });
  server.closeAllConnections(); // keep-alive clients (autocannon) would otherwise hold close open
});

console.log(`listening ${origin}`);
