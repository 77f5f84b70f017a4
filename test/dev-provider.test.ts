/**
 * Dev mode's fake identity provider (contract.md#d27): served by the process itself under /dev/idp,
 * with a connection `dev` on the dev tenant, made or re-aimed at each start (the port and the client
 * secret change per run). The sign-ins here go over real HTTP, a browser's way: fetch with manual
 * redirects and cookie jars, the provider's form filled as a person would. Dev mode is SQLite only,
 * so these harnesses name a SQLite file even in the PostgreSQL pass.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { DEV_TENANT_DOMAIN } from "../src/dev/dev-mode.js";
import { DEV_CONNECTION_ID } from "../src/dev/dev-provider.js";
import { startDevMode } from "../src/dev/start.js";
import { updateConnection } from "../src/flows/federation/connections.js";
import { SESSION_COOKIE } from "../src/http/tenant.js";
import { createHarness, type Harness } from "./support/harness.js";
import { nodeWarnings, startServerProcess, withNodeWarningsShown } from "./support/server-process.js";
import { CookieJar, signInAtProvider, type Person } from "./support/upstream-idp.js";

const FEDERATED_LINE = /^Federated sign-in: the login page has "Continue with Dev provider", a fake provider at (http:\/\/localhost:\d+\/dev\/idp) /;

async function devHarness(t: TestContext, env: Record<string, string> = {}): Promise<Harness> {
  const dataDir = mkdtempSync(join(tmpdir(), "latch-dev-idp-"));
  const h = await createHarness({ dataDir, env: { DEV_MODE: "true", DATABASE_URL: `sqlite:${join(dataDir, "dev.db")}`, ...env } });
  t.after(async () => {
    await h.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return h;
}

/** Listens on a new port and runs the dev-mode start, as server.ts does after listen. */
async function listenAndStart(h: Harness) {
  await h.app.listen({ port: 0, host: "127.0.0.1" });
  const printed: string[] = [];
  const started = await startDevMode(h.deps, h.app, (line) => printed.push(line));
  return { started, printed, origin: new URL(started.pagesUrl).origin };
}

/**
 * A browser's whole federated sign-in at `origin` (http://localhost:<port>): Latch's start, the
 * provider's form, Latch's callback, then `GET /auth/me` with the session it set.
 */
async function signInThroughDevProvider(origin: string, issuer: string, person: Person): Promise<{ landing: string; me: Record<string, unknown> }> {
  const latch = new CookieJar();
  const start = await fetch(`${origin}/auth/federated/${DEV_CONNECTION_ID}/start?returnTo=%2Fui%2Faccount`, { redirect: "manual" });
  assert.equal(start.status, 302, await start.text());
  latch.store(start);
  const authorizationUrl = start.headers.get("location")!;
  assert.ok(authorizationUrl.startsWith(`${issuer}/`), `the start sends the browser to the dev provider: ${authorizationUrl}`);
  const back = await signInAtProvider(issuer, authorizationUrl, person);
  assert.equal(`${back.origin}${back.pathname}`, `${origin}/auth/federated/${DEV_CONNECTION_ID}/callback`);
  assert.ok(back.searchParams.get("code"), back.href);
  const callback = await fetch(back, { redirect: "manual", headers: { cookie: latch.header() } });
  assert.equal(callback.status, 302, await callback.text());
  latch.store(callback);
  const landing = callback.headers.get("location")!;
  assert.ok(latch.header().includes(`${SESSION_COOKIE}=`), `a session cookie is set (landing on ${landing})`);
  const me = await fetch(`${origin}/auth/me`, { headers: { cookie: latch.header() } });
  assert.equal(me.status, 200);
  return { landing, me: (await me.json()) as Record<string, unknown> };
}

test("dev mode serves its provider at /dev/idp, creates connection `dev`, re-aims it at each start and signs a newcomer up through it", async (t) => {
  const h = await devHarness(t);
  const first = await listenAndStart(h);
  const issuer = `${first.origin}/dev/idp`;
  assert.deepEqual(first.started.provider, { started: true, issuer, connection: "created" });
  assert.equal(FEDERATED_LINE.exec(first.printed.find((l) => l.startsWith("Federated sign-in:")) ?? "")?.[1], issuer, first.printed.join("\n"));

  const discovery = await fetch(`${issuer}/.well-known/openid-configuration`);
  assert.equal(discovery.status, 200);
  const metadata = (await discovery.json()) as Record<string, unknown>;
  assert.equal(metadata.issuer, issuer);
  assert.equal(metadata.authorization_endpoint, `${issuer}/auth`);

  const tenant = (await h.deps.store.tenants.findTenantByDomain(DEV_TENANT_DOMAIN))!;
  const admin = { authorization: `Bearer ${first.started.internalApiKey!}` };
  const listed = await fetch(`${first.origin}/auth/admin/connections`, { headers: admin });
  assert.equal(listed.status, 200);
  const { connections } = (await listed.json()) as { connections: Record<string, unknown>[] };
  assert.equal(connections.length, 1);
  assert.deepEqual(
    { ...connections[0], createdAt: 0, updatedAt: 0 },
    {
      id: "dev",
      type: "oidc",
      displayName: "Dev provider",
      issuer,
      clientId: "latch-dev",
      scopes: ["openid", "email", "profile"],
      allowSignup: true,
      emailDomains: null,
      redirectUri: `${first.origin}/auth/federated/dev/callback`,
      createdAt: 0,
      updatedAt: 0,
    },
  );
  assert.ok(!JSON.stringify(connections).includes("clientSecret"), "never the secret");

  // The provider's page comes as oidc-provider and idp.ts send it: the reply is hijacked, so none of
  // the hosted pages' headers (their CSP, a request id) are added to it, and its form posts to itself.
  const start = await fetch(`${first.origin}/auth/federated/dev/start`, { redirect: "manual" });
  const interaction = await fetch(start.headers.get("location")!, { redirect: "manual" });
  assert.equal(interaction.status, 303);
  const page = await fetch(new URL(interaction.headers.get("location")!, first.origin), {
    headers: {
      cookie: interaction.headers
        .getSetCookie()
        .map((c) => c.split(";")[0])
        .join("; "),
    },
  });
  assert.equal(page.status, 200);
  assert.equal(page.headers.get("content-security-policy"), "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'");
  assert.equal(page.headers.get("x-request-id"), null);
  assert.match(await page.text(), /<form method="post" action="\/dev\/idp\/interaction\/[\w-]+">/);

  const ada = await signInThroughDevProvider(first.origin, issuer, { email: "ada@example.org", verified: true, name: "Ada" });
  assert.equal(ada.landing, "/ui/account");
  assert.equal(ada.me.email, "ada@example.org");

  // A developer's name for it survives a restart; the issuer (new port) and secret follow the process.
  const firstSecret = h.deps.secrets.open((await h.deps.store.connections.findConnection(tenant.id, DEV_CONNECTION_ID))!.clientSecretSealed);
  await updateConnection(h.deps, tenant, DEV_CONNECTION_ID, { displayName: "My fake" });
  await h.restart();
  const second = await listenAndStart(h);
  assert.notEqual(second.origin, first.origin);
  assert.deepEqual(second.started.provider, { started: true, issuer: `${second.origin}/dev/idp`, connection: "updated" });
  const [again, ...others] = await h.deps.store.connections.listConnections(tenant.id);
  assert.equal(others.length, 0, "still one connection");
  assert.equal(again!.issuer, `${second.origin}/dev/idp`);
  assert.equal(again!.displayName, "My fake");
  assert.notEqual(h.deps.secrets.open(again!.clientSecretSealed), firstSecret, "a new client secret each run");
  // The same person at the provider is the same identity: Ada signs in again, to her member.
  const adaAgain = await signInThroughDevProvider(second.origin, `${second.origin}/dev/idp`, { email: "ada@example.org", verified: true });
  assert.equal(adaAgain.me.email, "ada@example.org");
  assert.equal(adaAgain.me.recordid, ada.me.recordid);
});

test("dev mode with WEBHOOK_ALLOW_PRIVATE_NETWORKS=false runs no provider and says why", async (t) => {
  const h = await devHarness(t, { WEBHOOK_ALLOW_PRIVATE_NETWORKS: "false" });
  const { started, printed, origin } = await listenAndStart(h);
  assert.deepEqual(started.provider, { started: false, reason: "private_networks_closed" });
  assert.ok(
    printed.includes("Federated sign-in: the dev provider is off, since WEBHOOK_ALLOW_PRIVATE_NETWORKS=false keeps Latch from calling it on loopback."),
  );
  assert.equal((await fetch(`${origin}/dev/idp/.well-known/openid-configuration`)).status, 404);
  const tenant = (await h.deps.store.tenants.findTenantByDomain(DEV_TENANT_DOMAIN))!;
  assert.deepEqual(await h.deps.store.connections.listConnections(tenant.id), []);
});

test("without DEV_MODE there is no /dev/idp", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const res = await h.app.inject({ method: "GET", url: "/dev/idp/.well-known/openid-configuration" });
  assert.equal(res.statusCode, 404);
});

test("`npm run dev`'s process: a newcomer signs up through the dev provider over real HTTP, and nothing is printed on stderr", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "latch-dev-idp-process-"));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = withNodeWarningsShown({ ...process.env, DATABASE_URL: `sqlite:${dataDir}/dev.db`, PORT: "0", LOG_LEVEL: "info", BREACH_CHECK_MODE: "offline" });
  delete env.SECRETS_KEY;
  delete env.DEV_MODE;
  delete env.HOST;
  delete env.WEBHOOK_ALLOW_PRIVATE_NETWORKS;
  const server = await startServerProcess({ entry: "src/dev/main.ts", env, readyPattern: /^Dev tenant "localhost"/ });
  t.after(() => server.stop("SIGKILL"));
  const issuer = FEDERATED_LINE.exec(server.output().find((l) => l.startsWith("Federated sign-in:")) ?? "")?.[1];
  assert.ok(issuer, server.output().join("\n"));
  const origin = new URL(issuer).origin;
  assert.equal(origin, `http://localhost:${server.port}`);

  const discovery = await fetch(`${issuer}/.well-known/openid-configuration`);
  assert.equal(discovery.status, 200);
  assert.equal(((await discovery.json()) as { issuer: string }).issuer, issuer);
  const listed = await fetch(`${origin}/auth/federated/connections`);
  assert.equal(listed.status, 200);
  assert.deepEqual(((await listed.json()) as { connections: unknown[] }).connections, [
    { id: "dev", displayName: "Dev provider", startUrl: "/auth/federated/dev/start" },
  ]);

  const grace = await signInThroughDevProvider(origin, issuer, { email: "grace@example.org", verified: true, name: "Grace" });
  assert.equal(grace.landing, "/ui/account");
  assert.equal(grace.me.email, "grace@example.org");

  assert.equal(await server.stop(), 0);
  assert.deepEqual(server.errorOutput(), [], server.output().join("\n"));
  assert.deepEqual(nodeWarnings(server.output()), []);
  assert.ok(!server.output().some((l) => /oidc-provider/i.test(l) && /warn/i.test(l)), server.output().join("\n"));
});
