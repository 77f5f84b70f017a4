/**
 * Dev mode's fake identity provider (contract.md#d27, decisions.md#dev-mode-issue-7): src/dev/idp.ts served
 * by this process under /dev/idp, and a connection `dev` on the dev tenant pointing at it, so a
 * newcomer can try federated sign-in with no account anywhere. Its issuer holds the port, known only
 * once the server listens: the routes are mounted before listen (devProviderRoutes) and answer 404
 * until startDevProvider has made the provider.
 */
import type { FastifyPluginAsync } from "fastify";
import { randomToken } from "../core/random.js";
import type { Deps } from "../deps.js";
import { AuthError } from "../errors.js";
import { createConnection, connectionRedirectUri } from "../flows/federation/connections.js";
import type { Tenant } from "../model.js";
import type { DevMode } from "./dev-mode.js";
import { createDevIdp, devIdpRoutes } from "./idp.js";

export const DEV_IDP_PATH = "/dev/idp";
export const DEV_CONNECTION_ID = "dev";
export const DEV_CONNECTION_DISPLAY_NAME = "Dev provider";
export const DEV_IDP_CLIENT_ID = "latch-dev";

export type DevProviderStart = { started: true; issuer: string; connection: "created" | "updated" } | { started: false; reason: "private_networks_closed" };

/** The routes, given to buildApp as a plugin: they serve whatever provider `dev.idp` holds, 404 before. */
export const devProviderRoutes =
  (dev: DevMode): FastifyPluginAsync<{ deps: Deps }> =>
  async (app) => {
    await devIdpRoutes(app, () => dev.idp, DEV_IDP_PATH);
  };

/**
 * Makes the provider for `linkBase` (http://localhost:<port>) with a new client secret, and creates
 * the dev tenant's connection `dev` or points it at this run's provider. Only the issuer, client and
 * secret are rewritten: a display name, sign-up rule or email domains a developer set are kept.
 */
export async function startDevProvider(deps: Deps, dev: DevMode, tenant: Tenant, linkBase: string): Promise<DevProviderStart> {
  // Latch calls its own provider on loopback over http (discovery, token, JWKS): the outbound guard
  // and resolveIssuer allow that only with private networks open, dev mode's default.
  if (!deps.config.webhookAllowPrivateNetworks) return { started: false, reason: "private_networks_closed" };
  const issuer = `${linkBase}${DEV_IDP_PATH}`;
  const clientSecret = randomToken(deps.random);
  const redirectUri = connectionRedirectUri(deps, tenant, DEV_CONNECTION_ID);
  dev.idp = await createDevIdp({
    issuer,
    clients: [{ client_id: DEV_IDP_CLIENT_ID, client_secret: clientSecret, redirect_uris: [redirectUri] }],
    random: deps.random,
  });
  const settings = { type: "oidc" as const, issuer, clientId: DEV_IDP_CLIENT_ID, clientSecret };
  if (!(await deps.store.connections.findConnection(tenant.id, DEV_CONNECTION_ID))) {
    try {
      await createConnection(deps, tenant, { id: DEV_CONNECTION_ID, displayName: DEV_CONNECTION_DISPLAY_NAME, ...settings });
      return { started: true, issuer, connection: "created" };
    } catch (err) {
      // Another dev process on the same file created it between our read and our write: aim it here.
      if (!(err instanceof AuthError && err.code === "conflict")) throw err;
    }
  }
  // Through the store, not updateConnection: an issuer change drops a connection's links (another
  // provider's subjects), but this is the same provider at this run's port, its subjects a function
  // of the email, so the links made in earlier runs stay (decisions.md#federated-connections).
  const changes = { type: settings.type, issuer, clientId: DEV_IDP_CLIENT_ID, clientSecretSealed: deps.secrets.seal(clientSecret) };
  await deps.store.connections.updateConnection(tenant.id, DEV_CONNECTION_ID, changes, deps.clock.now());
  return { started: true, issuer, connection: "updated" };
}
