/**
 * `npm run dev`: the server in dev mode (DEV_MODE=true; see src/dev/start.ts and README "Try it in
 * a browser"). Like src/main.ts, the server is imported only after the environment is set.
 */
process.env.DEV_MODE = "true";
await import("../server.js");
