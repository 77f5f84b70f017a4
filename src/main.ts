/**
 * Process entry. Argon2 runs on libuv's thread pool, whose size comes only from the environment
 * (UV_THREADPOOL_SIZE): in an ES module entry Node has already started the pool before any code
 * here runs, so it can't be set in-process. server.ts warns when it is smaller than the cores.
 */
// DEV_MODE=true through this entry is dev mode too, wired as `npm run dev` wires it.
if (process.env.DEV_MODE?.trim() === "true") await import("./dev/main.js");
else await (await import("./server.js")).runServer();
