/**
 * Dev mode and the hosted pages: the printed URL is the registration page, a newly created dev
 * tenant lands logins on /ui/account (an existing one keeps its setting), and the pages show the
 * ALTCHA widget and a link to the dev inbox.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { DEV_TENANT_DOMAIN } from "../src/dev/dev-mode.js";
import { DEV_LOGIN_SUCCESS_REDIRECT } from "../src/dev/dev-tenant.js";
import { startDevMode } from "../src/dev/start.js";
import { updateTenantSettings } from "../src/flows/tenants/tenants.js";
import { createHarness } from "./support/harness.js";

test("dev mode prints the registration page, and a new dev tenant logs members in to /ui/account", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "latch-ui-dev-"));
  const h = await createHarness({ dataDir, env: { DEV_MODE: "true", DATABASE_URL: `sqlite:${join(dataDir, "dev.db")}` } });
  t.after(async () => {
    await h.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  await h.app.listen({ port: 0, host: "127.0.0.1" });
  const printed: string[] = [];
  const started = await startDevMode(h.deps, h.app, (line) => printed.push(line));
  assert.match(printed[0]!, /^Latch dev mode: open http:\/\/localhost:\d+\/ui\/register$/);
  assert.equal(started.pagesUrl, printed[0]!.replace("Latch dev mode: open ", ""));
  const tenant = await h.deps.store.tenants.findTenantByDomain(DEV_TENANT_DOMAIN);
  assert.equal(tenant!.settings.loginSuccessRedirect, DEV_LOGIN_SUCCESS_REDIRECT);
  assert.equal(DEV_LOGIN_SUCCESS_REDIRECT, "/ui/account");

  // The registration page answers at the printed URL, through Host as a browser sends it.
  const port = new URL(started.pagesUrl).port;
  const host = `localhost:${port}`;
  const page = await h.app.inject({ method: "GET", url: "/ui/register", headers: { host } });
  assert.equal(page.statusCode, 200);
  assert.match(page.body, /<altcha-widget challenge="\/auth\/bot-challenge"/, "the dev tenant uses ALTCHA");
  assert.match(page.body, /href="\/dev\/inbox">Dev inbox</, "dev mode links the inbox");
  // The site's root opens the pages (where a dev tenant made before them still sends logins).
  const root = await h.app.inject({ method: "GET", url: "/", headers: { host } });
  assert.equal(root.statusCode, 303);
  assert.equal(root.headers.location, "/ui/");

  // A developer's own setting survives the next start.
  await updateTenantSettings(h.deps, DEV_TENANT_DOMAIN, { loginSuccessRedirect: "/mine" });
  await h.restart();
  await h.app.listen({ port: 0, host: "127.0.0.1" });
  await startDevMode(h.deps, h.app, () => undefined);
  assert.equal((await h.deps.store.tenants.findTenantByDomain(DEV_TENANT_DOMAIN))!.settings.loginSuccessRedirect, "/mine");
});
