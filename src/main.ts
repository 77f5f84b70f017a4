/**
 * Process entry. Argon2 runs on libuv's thread pool, whose size comes only from the environment
 * (UV_THREADPOOL_SIZE): in an ES module entry Node has already started the pool before any code
 * here runs, so it can't be set in-process. server.ts warns when it is smaller than the cores.
 */
await import("./server.js");
