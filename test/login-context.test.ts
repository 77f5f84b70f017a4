/**
 * D16: logins record where they come from; a login from a new country or network writes
 * login_anomaly and sends the security_alert webhook; the same webhook tells of password
 * changes and resets, 2FA enabled or disabled, and a recovery code used. The GeoIP database is
 * one the test builds itself.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { networkOf } from "../src/providers/geoip.js";
import { alerts } from "./support/account.js";
import { adminHeaders, requestResetLink, resetPassword, storeTenantSettings } from "./support/flows.js";
import {
  createHarness,
  deliverWebhooks,
  get,
  login,
  OTHER_STRONG_PASSWORD,
  parseLink,
  post,
  registerVerifiedMember,
  sessionCookieOf,
  STRONG_PASSWORD,
  type Harness,
} from "./support/harness.js";
import { buildMmdb } from "./support/mmdb-writer.js";
import { totpAt } from "./support/totp.js";

const BERLIN = "198.51.100.7";
const BERLIN_2 = "198.51.100.99";
const PARIS = "203.0.113.5";

function geoDatabase(): string {
  const file = join(mkdtempSync(join(tmpdir(), "latch-geo-")), "city.mmdb");
  writeFileSync(
    file,
    buildMmdb([
      { network: "198.51.100.0/24", data: { country: { iso_code: "DE", names: { en: "Germany" } }, city: { names: { en: "Berlin" } } } },
      { network: "203.0.113.0/24", data: { country: { iso_code: "FR", names: { en: "France" } }, city: { names: { en: "Paris" } } } },
      { network: "192.0.2.0/24", data: { country: { iso_code: "FR", names: { en: "France" } }, city: { names: { en: "Lyon" } } } },
    ]),
  );
  return file;
}

async function harnessWithAlerts(geo: boolean): Promise<Harness> {
  const h = await createHarness({ env: geo ? { GEOIP_DB: geoDatabase() } : {} });
  await storeTenantSettings(h, { securityAlertWebhook: `${h.receiver.url}/alert` });
  return h;
}

/** The member's audit log as the tenant's admin API gives it. */
async function auditEvents(h: Harness, recordId: string): Promise<{ type: string; details: Record<string, unknown> }[]> {
  const res = await get(h, `/auth/admin/audit-log?recordId=${recordId}`, { headers: adminHeaders(h) });
  return res.json().events;
}

test("networkOf: IPv4 /24, IPv6 /48, IPv4-mapped IPv6", () => {
  assert.equal(networkOf("198.51.100.7"), "198.51.100.0/24");
  assert.equal(networkOf("::ffff:198.51.100.7"), "198.51.100.0/24");
  assert.equal(networkOf("2001:db8:1:2::5"), "2001:db8:1::/48");
  assert.equal(networkOf("2001:0db8::1"), "2001:db8:0::/48");
});

test("with a GeoIP database: country and city are recorded; a new country is an anomaly with an alert", async (t) => {
  const h = await harnessWithAlerts(true);
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, "geo@example.org");
  assert.equal((await login(h, "geo@example.org", STRONG_PASSWORD, { ip: BERLIN })).statusCode, 200);
  assert.equal((await login(h, "geo@example.org", STRONG_PASSWORD, { ip: BERLIN_2 })).statusCode, 200);
  let events = await auditEvents(h, recordId);
  const first = events.find((e) => e.type === "login_succeeded")!;
  assert.deepEqual(first.details, { method: "password", country: "DE", city: "Berlin" });
  assert.ok(!events.some((e) => e.type === "login_anomaly"), "the first login sets the baseline; the same network is not new");
  assert.equal((await alerts(h)).length, 0);

  assert.equal((await login(h, "geo@example.org", STRONG_PASSWORD, { ip: PARIS, headers: { "user-agent": "Travel/1.0" } })).statusCode, 200);
  events = await auditEvents(h, recordId);
  const anomaly = events.find((e) => e.type === "login_anomaly")!;
  assert.equal(anomaly.details.newCountry, true);
  assert.equal(anomaly.details.country, "FR");
  const [alert] = await alerts(h);
  assert.deepEqual(Object.keys(alert!).sort(), ["alert", "at", "country", "device", "email", "event_type", "ip", "name", "recordid", "secureAccountLink"]);
  assert.equal(alert!.device, null, "Travel/1.0 names no browser bowser knows");
  assert.match(
    String(alert!.secureAccountLink),
    new RegExp(`^https://${h.tenant.domain.replace(/\./g, "\\.")}/secure-account/${recordId}/[A-Za-z0-9_-]{43}$`),
    "D24: every alert has its 'this wasn't me' link",
  );
  assert.equal(alert!.event_type, "security_alert");
  assert.equal(alert!.alert, "login_anomaly");
  assert.equal(alert!.recordid, recordId);
  assert.equal(alert!.email, "geo@example.org");
  assert.equal(alert!.ip, PARIS);
  assert.equal(alert!.country, "FR");
  assert.equal(alert!.at, new Date(h.clock.now()).toISOString());

  // France is now known; a new French network is still a new network.
  assert.equal((await login(h, "geo@example.org", STRONG_PASSWORD, { ip: "192.0.2.10" })).statusCode, 200);
  events = await auditEvents(h, recordId);
  const second = events.filter((e) => e.type === "login_anomaly")[0]!;
  assert.deepEqual([second.details.newCountry, second.details.newNetwork], [false, true]);
});

test("without a GeoIP database, a new network is the anomaly; magic-link logins count too", async (t) => {
  const h = await harnessWithAlerts(false);
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, "net@example.org");
  await login(h, "net@example.org", STRONG_PASSWORD, { ip: BERLIN });
  await post(h, "/auth/request-magic-link", { email: "net@example.org", "bot-challenge-response": "x" });
  await deliverWebhooks(h);
  const link = parseLink(h.receiver.last("magic_login").body.magicLoginLink!);
  const chrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
  const magic = await post(
    h,
    `/auth/verify-magic-link/${link.recordId}/${link.token}`,
    { "bot-challenge-response": "x" },
    { ip: PARIS, headers: { "user-agent": chrome } },
  );
  assert.equal(magic.statusCode, 200);
  const events = await auditEvents(h, recordId);
  const anomaly = events.find((e) => e.type === "login_anomaly")!;
  assert.deepEqual(anomaly.details, { newCountry: false, newNetwork: true, country: null, network: "203.0.113.0/24" });
  const [alert] = await alerts(h);
  assert.equal(alert!.alert, "login_anomaly");
  assert.equal(alert!.country, null);
  // hosted-pages.md#readable-devices: the alert names the device in words, not as a user-agent string.
  assert.equal(alert!.device, "Chrome on Linux");
});

test("the alert webhook tells of password change and reset, 2FA enabled and disabled, and a recovery code used", async (t) => {
  const h = await harnessWithAlerts(false);
  t.after(() => h.close());
  await registerVerifiedMember(h, "alerts@example.org");
  const cookie = sessionCookieOf(await login(h, "alerts@example.org"))!;
  assert.equal((await post(h, "/auth/change-password", { currentPassword: STRONG_PASSWORD, newPassword: OTHER_STRONG_PASSWORD }, { cookie })).statusCode, 200);
  const reset = await requestResetLink(h, "alerts@example.org");
  assert.equal((await resetPassword(h, reset.recordId, reset.token, STRONG_PASSWORD)).statusCode, 200);

  const session = sessionCookieOf(await login(h, "alerts@example.org"))!;
  const { secret } = (await post(h, "/auth/2fa/setup", { password: STRONG_PASSWORD }, { cookie: session })).json();
  const enabled = await post(h, "/auth/2fa/enable", { code: totpAt(secret, h.clock.now()) }, { cookie: session });
  const recoveryCode = enabled.json().recoveryCodes[0] as string;
  const withRecovery = await post(h, "/auth/login", {
    email: "alerts@example.org",
    password: STRONG_PASSWORD,
    twoFACode: recoveryCode,
    "bot-challenge-response": "x",
  });
  assert.equal(withRecovery.statusCode, 200, withRecovery.body);
  assert.equal((await post(h, "/auth/2fa/disable", { password: STRONG_PASSWORD }, { cookie: sessionCookieOf(withRecovery) })).statusCode, 200);

  const received = (await alerts(h)).map((a) => a.alert);
  assert.deepEqual(received.sort(), ["password_changed", "password_reset", "recovery_code_used", "two_factor_disabled", "two_factor_enabled"]);
});

test("a tenant without securityAlertWebhook gets no alerts, but the anomaly is still audited", async (t) => {
  const h = await createHarness();
  t.after(() => h.close());
  const recordId = await registerVerifiedMember(h, "quiet@example.org");
  await login(h, "quiet@example.org", STRONG_PASSWORD, { ip: BERLIN });
  await login(h, "quiet@example.org", STRONG_PASSWORD, { ip: PARIS });
  assert.ok((await auditEvents(h, recordId)).some((e) => e.type === "login_anomaly"));
  await deliverWebhooks(h);
  assert.equal(h.receiver.ofType("security_alert").length, 0);
});
