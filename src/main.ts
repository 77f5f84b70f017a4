/**
 * Process entry. Sizes libuv's thread pool before anything can start it: Argon2 runs there, so a
 * pool smaller than the cores would queue logins behind each other. Then loads the server.
 */
import { availableParallelism } from "node:os";

process.env.UV_THREADPOOL_SIZE ??= String(Math.max(4, availableParallelism()));
await import("./server.js");
