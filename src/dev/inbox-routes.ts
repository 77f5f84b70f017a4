/**
 * The dev inbox (dev mode only; src/dev/main.ts adds it then, so it is 404 otherwise):
 * POST /dev/inbox/webhook receives the webhooks of this server's tenants (the dev tenant's, and any
 * other pointed here) and keeps those whose Standard Webhooks signature verifies; GET /dev/inbox shows them as the tenant's emails; GET /dev/inbox.json lists them;
 * GET / redirects to the hosted pages.
 */
import type { FastifyPluginAsync } from "fastify";
import type { Deps } from "../deps.js";
import type { TenantSecrets } from "../store/tenants.js";
import { AuthError } from "../errors.js";
import type { DevMode } from "./dev-mode.js";
import { describeMessage } from "./inbox.js";
import { INBOX_PAGE_CSP, renderInboxPage } from "./inbox-page.js";
import { isWebhookSignatureValid, type SignedWebhookHeaders } from "./verify-webhook.js";

const SECRETS_PAGE = 100;

/**
 * The site whose current webhook secret, or previous one within its rotation window, signed this
 * webhook, read like the dispatcher reads them (store + secret box), or undefined. Any tenant's, not only the dev tenant's: a second tenant
 * created in dev mode whose webhooks point here must not be refused while its pages say "check the
 * dev inbox". One query per page of secrets (the same listing `latch secrets reseal` walks), and
 * one for the signer's domain.
 */
async function findSigningSite(deps: Deps, headers: SignedWebhookHeaders, body: string, now: number): Promise<string | undefined> {
  for (let after = ""; ;) {
    const page = await deps.store.tenants.listTenantSecrets(after, SECRETS_PAGE);
    const signer = page.find((tenant) => isWebhookSignatureValid(openSigningSecrets(deps, tenant, now), headers, body, now));
    if (signer) return (await deps.store.tenants.findTenantById(signer.tenantId))?.domain;
    if (page.length < SECRETS_PAGE) return undefined;
    after = page.at(-1)!.tenantId;
  }
}

/** The secrets a delivery sent at `now` may be signed with; one sealed with another SECRETS_KEY can verify nothing and is left out. */
function openSigningSecrets(deps: Deps, tenant: TenantSecrets, now: number): string[] {
  const { webhookSecretEnc, previousWebhookSecretEnc: previous, previousWebhookSecretExpiresAt: expiresAt } = tenant;
  const sealed = previous !== null && expiresAt !== null && expiresAt > now ? [previous, webhookSecretEnc] : [webhookSecretEnc];
  return sealed.flatMap((value) => {
    try {
      return [deps.secrets.open(value)];
    } catch {
      return []; // a dev restart replaces the dev tenant's unreadable secret
    }
  });
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
      const site = await findSigningSite(deps, headers, body, now);
      if (site === undefined) throw new AuthError("unauthorized", { message: "The webhook signature is not valid for any tenant of this dev server." });
      let payload: unknown;
      try {
        payload = JSON.parse(body);
      } catch {
        throw new AuthError("validation_failed", { message: "The request body is not valid JSON." });
      }
      if (typeof payload !== "object" || payload === null || Array.isArray(payload))
        throw new AuthError("validation_failed", { message: "The webhook body must be a JSON object." });
      dev.inbox.add({ id: headers.id!, site, receivedAt: now, payload: payload as Record<string, unknown> });
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
        .send(renderInboxPage(dev.inbox.list().map(describeMessage), { autoRefresh: refresh === "on", pagesBase: dev.linkBase }));
    });
  };
