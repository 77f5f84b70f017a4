/**
 * The dev inbox (dev mode only; src/dev/main.ts adds it then, so it is 404 otherwise):
 * POST /dev/inbox/webhook receives the webhooks of this server's tenants (the dev tenant's, and any
 * other pointed here) and keeps those whose Standard Webhooks signature verifies; GET /dev/inbox shows them as the tenant's emails; GET /dev/inbox.json lists them;
 * GET / redirects to the hosted pages.
 */
import type { FastifyPluginAsync } from "fastify";
import type { Deps } from "../deps.js";
import { AuthError } from "../errors.js";
import type { DevMode } from "./dev-mode.js";
import { describeMessage } from "./inbox.js";
import { INBOX_PAGE_CSP, renderInboxPage } from "./inbox-page.js";
import { isWebhookSignatureValid } from "./verify-webhook.js";

/**
 * Every tenant's current webhook secret, read like the dispatcher reads it (store + secret box).
 * Not only the dev tenant's: a second tenant created in dev mode whose webhooks point here must
 * not be refused while its pages say "check the dev inbox". Dev mode is one SQLite file with a
 * handful of tenants, so reading them all per delivery costs nothing that matters.
 */
async function findWebhookSecrets(deps: Deps): Promise<{ domain: string; secret: string }[]> {
  const secrets: { domain: string; secret: string }[] = [];
  for (const { domain } of await deps.store.tenants.listTenants()) {
    const tenant = await deps.store.tenants.findTenantByDomain(domain);
    const sealed = tenant && (await deps.store.tenants.findWebhookSecret(tenant.id));
    if (sealed === undefined) continue;
    try {
      secrets.push({ domain, secret: deps.secrets.open(sealed) });
    } catch {
      // sealed with another SECRETS_KEY: nothing can verify it (a dev restart replaces the dev tenant's)
    }
  }
  return secrets;
}

function headerText(value: string | string[] | undefined): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** The dev inbox routes for buildApp's `plugins`: src/dev/main.ts and the test harness add them in dev mode only. */
export const devInboxRoutes =
  (dev: DevMode): FastifyPluginAsync<{ deps: Deps }> =>
  async (app, { deps }) => {
    // The signature covers the exact bytes sent, so this scope keeps the body as a string.
    app.removeContentTypeParser("application/json");
    app.addContentTypeParser("application/json", { parseAs: "string" }, (_request, body, done) => done(null, body));

    // Dev-only routes stay out of the API reference: they are not part of the contract.
    const hidden = { schema: { hide: true } };

    // In dev mode Latch is the whole site on localhost: its root opens the hosted pages, so a dev
    // tenant whose loginSuccessRedirect is still the default "/" (one created before the pages
    // existed) lands somewhere after login.
    app.get("/", hidden, async (_request, reply) => reply.redirect("/ui/", 303));

    app.post("/dev/inbox/webhook", hidden, async (request, reply) => {
      const body = typeof request.body === "string" ? request.body : "";
      const headers = {
        id: headerText(request.headers["webhook-id"]),
        timestamp: headerText(request.headers["webhook-timestamp"]),
        signature: headerText(request.headers["webhook-signature"]),
      };
      const now = deps.clock.now();
      const signer = (await findWebhookSecrets(deps)).find(({ secret }) => isWebhookSignatureValid(secret, headers, body, now));
      if (signer === undefined) throw new AuthError("unauthorized", { message: "The webhook signature is not valid for any tenant of this dev server." });
      let payload: unknown;
      try {
        payload = JSON.parse(body);
      } catch {
        throw new AuthError("validation_failed", { message: "The request body is not valid JSON." });
      }
      if (typeof payload !== "object" || payload === null || Array.isArray(payload))
        throw new AuthError("validation_failed", { message: "The webhook body must be a JSON object." });
      dev.inbox.add({ id: headers.id!, site: signer.domain, receivedAt: now, payload: payload as Record<string, unknown> });
      return reply.code(204).send();
    });

    app.get("/dev/inbox.json", hidden, async (_request, reply) => {
      void reply.header("cache-control", "no-store");
      return { messages: dev.inbox.list().map(describeMessage) };
    });

    app.get("/dev/inbox", hidden, async (request, reply) => {
      const { refresh } = request.query as { refresh?: unknown };
      return reply
        .type("text/html; charset=utf-8")
        .header("cache-control", "no-store")
        .header("content-security-policy", INBOX_PAGE_CSP)
        .header("x-content-type-options", "nosniff")
        .header("referrer-policy", "no-referrer")
        .send(renderInboxPage(dev.inbox.list().map(describeMessage), { autoRefresh: refresh === "on" }));
    });
  };
