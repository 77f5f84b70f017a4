// The operator API through the SDK (issue 29): every operator operation has a method, and these
// drive them against a real Latch on a real port with the operator key, as the operator's own
// tooling would: create a tenant, read and change its settings, rotate its keys, read deliveries.
import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { createLatchClient, isLatchError, type NewTenantSettings } from "../packages/client/src/index.js";
import { createHarness, deliverWebhooks, OPERATOR_KEY, STRONG_PASSWORD, type Harness } from "./support/harness.js";

let h: Harness;
let baseUrl: string;

before(async () => {
  h = await createHarness();
  await h.app.listen({ port: 0, host: "127.0.0.1" });
  baseUrl = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
});
after(() => h.close());

/** The headers of each request, before sending it. */
function recording(sent: Headers[]): typeof fetch {
  return async (input, init) => {
    sent.push(new Headers(init?.headers));
    return fetch(input, init);
  };
}

const settings = (): NewTenantSettings => ({
  emailVerificationWebhook: `${h.receiver.url}/verify`,
  passwordResetWebhook: `${h.receiver.url}/reset`,
  magicLoginWebhook: `${h.receiver.url}/magic`,
  botProtection: { provider: "none" },
});

test("create, show, change, rotate, list deliveries and delete a tenant through the SDK, each with the operator key only", async () => {
  const sent: Headers[] = [];
  const operator = createLatchClient({ baseUrl, operatorKey: OPERATOR_KEY, apiKey: "an-admin-key-that-stays-home", fetch: recording(sent) });

  const created = await operator.createTenant({ domain: "sdk-op.example.com", settings: settings() });
  assert.equal(created.domain, "sdk-op.example.com");
  assert.match(created.webhookSecret, /^whsec_/);
  assert.ok(created.internalApiKey, "a new application comes with its key");
  const joined = await operator.createTenant({ domain: "sdk-op-two.example.com", applicationId: created.applicationId, settings: settings() });
  assert.equal(joined.applicationId, created.applicationId);
  assert.equal(joined.internalApiKey, undefined, "joining shares the application's key, not shown again");

  const shown = await operator.showTenant("sdk-op.example.com");
  assert.equal(shown.settings.sessionTier, "1d");
  const changed = await operator.updateTenantSettings("sdk-op.example.com", { settings: { sessionTier: "8h", require2FA: true } });
  assert.deepEqual([changed.settings.sessionTier, changed.settings.require2FA, changed.settings.magicLoginWebhook], ["8h", true, `${h.receiver.url}/magic`]);

  // A member registers, so the tenant has a delivery to list.
  const member = createLatchClient({ baseUrl, tenantDomain: "sdk-op.example.com" });
  await member.registerWithPassword({ email: "op.member@example.org", name: "Ada Lovelace", password: STRONG_PASSWORD });
  await deliverWebhooks(h);
  const { deliveries } = await operator.listWebhookDeliveries("sdk-op.example.com", { limit: 5 });
  assert.deepEqual(
    deliveries.map((d) => [d.eventType, d.status]),
    [["verify_email", "delivered"]],
  );

  const secret = await operator.rotateWebhookSecret("sdk-op.example.com");
  assert.match(secret.webhookSecret, /^whsec_/);
  assert.notEqual(secret.webhookSecret, created.webhookSecret);

  const admin = (key: string) => createLatchClient({ baseUrl, tenantDomain: "sdk-op.example.com", apiKey: key });
  assert.equal((await admin(created.internalApiKey).listMembers()).members.length, 1);
  const rotated = await operator.rotateApplicationKey(created.applicationId);
  assert.notEqual(rotated.internalApiKey, created.internalApiKey);
  await assert.rejects(admin(created.internalApiKey).listMembers(), (err) => isLatchError(err, "unauthorized"), "the old key stopped working");
  assert.equal((await admin(rotated.internalApiKey).listMembers()).members.length, 1);

  await assert.rejects(operator.showTenant("nobody.example.com"), (err) => isLatchError(err, "unknown_tenant"));
  await operator.deleteTenant("sdk-op-two.example.com", "sdk-op-two.example.com");
  const gone = await operator.deleteTenant("sdk-op.example.com", "sdk-op.example.com");
  assert.equal(gone.applicationDeleted, true);

  assert.ok(sent.length >= 10);
  for (const headers of sent) {
    assert.equal(headers.get("authorization"), `Bearer ${OPERATOR_KEY}`, "the operator key, never the admin key");
    assert.equal(headers.get("x-tenant-domain"), null, "operator calls name no tenant");
  }
});
