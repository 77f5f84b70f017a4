/**
 * `npm run dev`: the server in dev mode (DEV_MODE=true; see src/dev/start.ts and README "Try it in
 * a browser"), wired here: the dev tenant's links, the dev inbox routes, the
 * fake identity provider's routes (its provider is made at start, once the port is known), the dev tenant at start.
 * Like src/main.ts, the server is imported only after the environment is set.
 */
import { DevMode } from "./dev-mode.js";
import { devProviderRoutes } from "./dev-provider.js";
import { devInboxRoutes } from "./inbox-routes.js";
import { startDevMode } from "./start.js";
import { guardTransactions } from "../store/transaction-scope.js";

process.env.DEV_MODE = "true";
const { runServer } = await import("../server.js");
const dev = new DevMode();
// contract.md#issue-28: dev mode refuses the outer store inside a transaction, as the tests do (transaction-scope.ts).
guardTransactions();
await runServer({ dev, app: { plugins: [devInboxRoutes(dev), devProviderRoutes(dev)] }, afterListen: (deps, app) => startDevMode(deps, app) });
