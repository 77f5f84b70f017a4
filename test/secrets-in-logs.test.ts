// No secret reaches a log line, an audit event or the deliveries listing (spec 2.3, D1, D4, D9).
// Runs every flow once, collects each secret it sees, then searches everything the service wrote.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { LightMyRequestResponse } from "fastify";
import {
  createHarness,
  deliverWebhooks,
  get,
  OPERATOR_KEY,
  OTHER_STRONG_PASSWORD,
  parseLink,
  post,
  registerVerifiedMember,
  sessionCookieOf,
  STRONG_PASSWORD,
} from "./support/harness.js";
import { adminRequestHeaders, magicLinkFor, storeTenantSettings } from "./support/flows.js";
import { startLocalServer, type LocalServer } from "./support/local-servers.js";

const THIRD_PASSWORD = "Zebra-Quartz-77-Lantern";
const WRONG_PASSWORD = "Wrong-Guess-Pass-55";
const BOT_RESPONSE = "bot-response-0.Zx81SecretChallengeValue_q9";
const BOT_SECRET_KEY = "0x4AAAAAAA-turnstile-secret-key-Kq7";
const WRONG_API_KEY = "latch_guessed-key-that-does-not-exist-9f3b";

/** A siteverify stand-in: accepts exactly BOT_RESPONSE sent with BOT_SECRET_KEY. */
function startSiteverify(): Promise<LocalServer> {
  return startLocalServer((request, response) => {
    const form = new URLSearchParams(request.body);
    const success = form.get("secret") === BOT_SECRET_KEY && form.get("response") === BOT_RESPONSE;
    response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ success, "error-codes": success ? [] : ["invalid-input-response"] }));
  });
}

function ok(response: LightMyRequestResponse, label: string, status = 200): LightMyRequestResponse {
  assert.equal(response.statusCode, status, `${label}: ${response.body}`);
  return response;
}

test("a full flow leaves no secret in the logs, the audit log or the deliveries listing", async () => {
  const siteverify = await startSiteverify();
  const h = await createHarness({
    settings: { botProtection: { provider: "turnstile", secretKey: BOT_SECRET_KEY, verifyUrl: `${siteverify.url}/siteverify` } },
  });
  await storeTenantSettings(h, { securityAlertWebhook: `${h.receiver.url}/alerts` });
  // Whatever a deployment runs at, nothing secret may be logged: capture every level.
  h.deps.log.level = "trace";
  const secrets = new Map<string, string>();
  const keep = (label: string, value: string | undefined): string => {
    assert.ok(value && value.length >= 8, `secret ${label} is present and long enough to search for`);
    secrets.set(label, value);
    return value;
  };
  try {
    keep("password 1", STRONG_PASSWORD);
    keep("password 2", OTHER_STRONG_PASSWORD);
    keep("password 3", THIRD_PASSWORD);
    keep("wrong password", WRONG_PASSWORD);
    keep("bot-challenge-response", BOT_RESPONSE);
    keep("bot secretKey", BOT_SECRET_KEY);
    keep("wrong api key", WRONG_API_KEY);
    keep("operator key", OPERATOR_KEY);
    const apiKey = keep("internal api key", h.tenant.internalApiKey);
    keep("webhook secret", h.tenant.webhookSecret);
    keep("webhook secret key bytes", h.tenant.webhookSecret.slice("whsec_".length));
    const email = "secret.keeper@example.org";
    const bot = { "bot-challenge-response": BOT_RESPONSE };

    // Register, deliver, verify.
    const registered = ok(await post(h, "/auth/register-password", { email, name: "Secret Keeper", password: STRONG_PASSWORD, ...bot }), "register");
    const recordId = registered.json<{ recordid: string }>().recordid;
    assert.ok((await deliverWebhooks(h)) >= 1, "the email went out (security alerts may go with it)");
    const verificationLink = keep("verification link", h.receiver.last("verify_email").body.verificationLink);
    const verifyToken = keep("verification token", parseLink(verificationLink).token);
    ok(await post(h, "/auth/verify-email", { recordId, token: verifyToken }), "verify");
    // A second use of the token fails (and is not logged either).
    ok(await post(h, "/auth/verify-email", { recordId, token: verifyToken }), "verify twice", 400);

    // Log in (one failure first), read the session, change the password.
    ok(await post(h, "/auth/login", { email, password: WRONG_PASSWORD, ...bot }), "wrong login", 401);
    ok(await post(h, "/auth/login", { email, password: STRONG_PASSWORD, "bot-challenge-response": "not-the-bot-value" }), "failed bot check", 403);
    const loggedIn = ok(await post(h, "/auth/login", { email, password: STRONG_PASSWORD, ...bot }), "login");
    const session1 = keep("session 1", sessionCookieOf(loggedIn));
    ok(await get(h, "/auth/session", { cookie: session1 }), "session");
    ok(
      await post(h, "/auth/change-password", { currentPassword: WRONG_PASSWORD, newPassword: OTHER_STRONG_PASSWORD }, { cookie: session1 }),
      "change with wrong current",
      401,
    );
    ok(
      await post(
        h,
        "/auth/change-password",
        { currentPassword: STRONG_PASSWORD, newPassword: OTHER_STRONG_PASSWORD },
        { cookie: session1, headers: { origin: `https://${h.tenant.domain}` } },
      ),
      "change",
    );
    ok(await get(h, "/auth/session", { cookie: session1, headers: { origin: "https://evil.example" } }), "foreign origin", 403);

    // Forgot, deliver, reset (a weak try first: it must not use the link up), log in again.
    ok(await post(h, "/auth/forgot-password", { email, ...bot }), "forgot");
    assert.ok((await deliverWebhooks(h)) >= 1, "the email went out (security alerts may go with it)");
    const resetLink = keep("reset link", h.receiver.last("password_reset").body.resetLink);
    const resetToken = keep("reset token", parseLink(resetLink).token);
    ok(await post(h, "/auth/reset-password", { recordId, token: resetToken, newPassword: "weakpass" }), "weak reset", 400);
    ok(await post(h, "/auth/reset-password", { recordId, token: resetToken, newPassword: THIRD_PASSWORD }), "reset");
    const loggedInAgain = ok(await post(h, "/auth/login", { email, password: THIRD_PASSWORD, ...bot }), "login after reset");
    const session2 = keep("session 2", sessionCookieOf(loggedInAgain));

    // Admin lock/unlock with the key; a wrong key is refused.
    ok(
      await h.app.inject({
        method: "POST",
        url: "/auth/lock-account",
        payload: { recordId, action: "lock" },
        headers: adminRequestHeaders(h, { key: WRONG_API_KEY }),
      }),
      "wrong key",
      401,
    );
    ok(
      await h.app.inject({
        method: "POST",
        url: "/auth/lock-account",
        payload: { recordId, action: "lock" },
        headers: adminRequestHeaders(h, { key: apiKey }),
      }),
      "lock",
    );
    ok(await post(h, "/auth/login", { email, password: THIRD_PASSWORD, ...bot }), "login while locked", 403);
    ok(
      await h.app.inject({
        method: "POST",
        url: "/auth/lock-account",
        payload: { recordId, action: "unlock", email },
        headers: adminRequestHeaders(h, { key: apiKey }),
      }),
      "unlock",
    );
    const session3 = keep("session 3", sessionCookieOf(ok(await post(h, "/auth/login", { email, password: THIRD_PASSWORD, ...bot }), "login after unlock")));
    // D28: an OAuth client's secret, returned once by its creation, then the client read back and removed.
    const oauthClientAnswer = ok(
      await h.app.inject({
        method: "POST",
        url: "/auth/admin/oauth-clients",
        payload: { name: "Shop", type: "confidential", redirectUris: ["https://shop.example.com/cb"] },
        headers: adminRequestHeaders(h, { key: apiKey }),
      }),
      "oauth client",
      201,
    ).json<{ client: { clientId: string; clientSecret: string } }>().client;
    keep("oauth client secret", oauthClientAnswer.clientSecret);
    const oauthClientUrl = `/auth/admin/oauth-clients/${oauthClientAnswer.clientId}`;
    ok(await h.app.inject({ method: "GET", url: oauthClientUrl, headers: adminRequestHeaders(h, { key: apiKey }) }), "oauth client shown");
    ok(await h.app.inject({ method: "DELETE", url: oauthClientUrl, headers: adminRequestHeaders(h, { key: apiKey }) }), "oauth client removed");

    // A magic link: its token travels in the URL path, which the logs mask and the route binding never holds.
    ok(await post(h, "/auth/request-magic-link", { email, ...bot }), "request magic link");
    assert.ok((await deliverWebhooks(h)) >= 1, "the email went out (security alerts may go with it)");
    const magicLink = keep("magic link", h.receiver.last("magic_login").body.magicLoginLink);
    const magicToken = keep("magic token", parseLink(magicLink).token);
    keep("magic session", sessionCookieOf(ok(await post(h, `/auth/verify-magic-link/${recordId}/${magicToken}`, bot), "verify magic link")));

    // D24: an email change confirmed on its hosted page, the session list, and "this wasn't me" on its page.
    const magicSession = secrets.get("magic session")!;
    ok(await post(h, "/auth/change-email", { newEmail: "secret.keeper.2@example.org", password: THIRD_PASSWORD }, { cookie: magicSession }), "change email");
    await deliverWebhooks(h);
    const changeLink = keep("email change link", h.receiver.last("email_change").body.verificationLink);
    const changeToken = keep("email change token", parseLink(changeLink).token);
    const formPost = (url: string) =>
      h.app.inject({
        method: "POST",
        url,
        payload: "",
        headers: { host: h.tenant.domain, origin: `https://${h.tenant.domain}`, "content-type": "application/x-www-form-urlencoded" },
      });
    ok(await get(h, "/auth/sessions", { cookie: magicSession }), "session list");
    ok(await formPost(`/email-change/${recordId}/${changeToken}`), "confirm email change page", 303);
    await deliverWebhooks(h);
    const secureLink = keep("secure account link", h.receiver.last("security_alert").body.secureAccountLink);
    const secureToken = keep("secure account token", parseLink(secureLink).token);
    ok(await formPost(`/ui/secure-account/${recordId}/${secureToken}`), "this wasn't me page", 303);
    ok(await post(h, "/auth/reset-password", { recordId, token: resetToken, newPassword: THIRD_PASSWORD }), "the earlier reset link is void", 400);
    ok(await post(h, "/auth/forgot-password", { email, ...bot }), "forgot after securing");
    await deliverWebhooks(h);
    const resetAgain = parseLink(keep("second reset link", h.receiver.last("password_reset").body.resetLink)).token;
    ok(await post(h, "/auth/reset-password", { recordId, token: keep("second reset token", resetAgain), newPassword: THIRD_PASSWORD }), "reset after securing");
    const session3b = keep(
      "session after securing",
      sessionCookieOf(ok(await post(h, "/auth/login", { email, password: THIRD_PASSWORD, ...bot }), "login after securing")),
    );

    // Operator: create a tenant, rotate the key and the webhook secret.
    const operatorHeaders = { authorization: `Bearer ${OPERATOR_KEY}` };
    const created = ok(
      await h.app.inject({
        method: "POST",
        url: "/operator/tenants",
        headers: operatorHeaders,
        payload: {
          domain: "second.example.com",
          settings: {
            emailVerificationWebhook: `${h.receiver.url}/v2`,
            passwordResetWebhook: `${h.receiver.url}/r2`,
            magicLoginWebhook: `${h.receiver.url}/m2`,
            botProtection: { provider: "hcaptcha", secretKey: "hcaptcha-secret-key-for-second-tenant" },
          },
        },
      }),
      "operator create",
      201,
    );
    keep("second tenant bot secretKey", "hcaptcha-secret-key-for-second-tenant");
    keep("second tenant webhook secret", created.json<{ webhookSecret: string }>().webhookSecret);
    keep("second tenant api key", created.json<{ internalApiKey: string }>().internalApiKey);
    ok(await h.app.inject({ method: "GET", url: "/operator/tenants/second.example.com", headers: operatorHeaders }), "operator show");
    ok(
      await h.app.inject({
        method: "GET",
        url: "/operator/tenants/second.example.com",
        headers: { authorization: "Bearer wrong-operator-key-that-is-long-enough-1234" },
      }),
      "wrong operator key",
      401,
    );
    keep("wrong operator key", "wrong-operator-key-that-is-long-enough-1234");
    const rotatedKey = keep(
      "rotated api key",
      ok(
        await h.app.inject({ method: "POST", url: `/operator/applications/${h.tenant.applicationId}/rotate-key`, headers: operatorHeaders }),
        "rotate key",
      ).json<{ internalApiKey: string }>().internalApiKey,
    );
    keep(
      "rotated webhook secret",
      ok(
        await h.app.inject({ method: "POST", url: `/operator/tenants/${h.tenant.domain}/rotate-webhook-secret`, headers: operatorHeaders }),
        "rotate secret",
      ).json<{ webhookSecret: string }>().webhookSecret,
    );

    // Refused bodies that carry a password: malformed JSON, wrong media type, wrong type, over-long.
    const raw = (payload: string, contentType: string) =>
      h.app.inject({ method: "POST", url: "/auth/login", payload, headers: { "x-tenant-domain": h.tenant.domain, "content-type": contentType } });
    ok(await raw(`{"email":"${email}","password":"${THIRD_PASSWORD}"`, "application/json"), "malformed json", 400);
    ok(await raw(`{"email":"${email}","password":"${THIRD_PASSWORD}",}`, "application/json"), "trailing comma", 400);
    ok(await raw(`email=${email}&password=${THIRD_PASSWORD}`, "application/x-www-form-urlencoded"), "form body", 415);
    assert.ok((await raw(`{"email":"${email}","password":"${THIRD_PASSWORD}"}`, "text/plain")).statusCode < 500, "text/plain body");
    ok(await post(h, "/auth/login", { email, password: [THIRD_PASSWORD], ...bot }), "password as array", 400);
    ok(await post(h, "/auth/login", { email, password: THIRD_PASSWORD.repeat(40), ...bot }), "over-long password", 400);

    // Logout, and one more admin call with the rotated key.
    ok(await post(h, "/auth/logout", {}, { cookie: session3b }), "logout");
    ok(await get(h, "/auth/session", { cookie: session3b }), "session after logout", 401);
    const audit = ok(
      await h.app.inject({ method: "GET", url: `/auth/admin/audit-log?recordId=${recordId}`, headers: adminRequestHeaders(h, { key: rotatedKey }) }),
      "audit log",
    );
    const deliveriesMain = ok(
      await h.app.inject({ method: "GET", url: `/operator/tenants/${h.tenant.domain}/webhook-deliveries`, headers: operatorHeaders }),
      "deliveries",
    );
    const deliveriesSecond = ok(
      await h.app.inject({ method: "GET", url: "/operator/tenants/second.example.com/webhook-deliveries", headers: operatorHeaders }),
      "deliveries 2",
    );
    assert.ok(siteverify.requests.length >= 6, "the bot value went to the provider");
    assert.ok(session2 !== session1 && session3 !== session2);

    // The logs are real: request lines, flow lines, webhook lines.
    const logText = h.logs.join("\n");
    assert.ok(h.logs.length > 20, `only ${h.logs.length} log lines`);
    const lines = h.logs
      .flatMap((chunk) => chunk.split("\n").filter(Boolean))
      .map((line) => JSON.parse(line) as { msg?: string; reqId?: string; route?: string; tenant?: string; req?: { url?: string } });
    assert.ok(lines.filter((l) => l.msg === "incoming request").length >= 25, "request logs are present");
    assert.ok(lines.some((l) => l.msg === "request completed"));
    assert.ok(
      lines.some((l) => l.req?.url === "/auth/reset-password"),
      "request URLs are logged",
    );
    assert.ok(lines.some((l) => l.msg === "webhook delivered"));
    // Each request's lines carry its id and route pattern, and on /auth routes the requested tenant domain.
    const requestLines = lines.filter((l) => l.msg === "incoming request" || l.msg === "request completed");
    assert.ok(
      requestLines.every((l) => typeof l.reqId === "string" && l.reqId.startsWith("req_")),
      "every request line has its reqId",
    );
    assert.ok(
      requestLines.every((l) => typeof l.route === "string"),
      "every request here matched a route, and its lines name the pattern",
    );
    const completedForTenant = requestLines.filter((l) => l.msg === "request completed" && l.route!.startsWith("/auth/"));
    assert.ok(completedForTenant.length >= 25 && completedForTenant.every((l) => l.tenant === h.tenant.domain), "completed /auth requests name the tenant");
    assert.ok(
      requestLines.some((l) => l.route === "/auth/verify-magic-link/:recordId/:token"),
      "the magic-link route is logged as its pattern",
    );

    const audited = audit.json<{ events: { type: string }[] }>().events.map((e) => e.type);
    for (const type of [
      "registered",
      "email_verified",
      "login_failed",
      "login_succeeded",
      "password_changed",
      "password_reset_requested",
      "password_reset",
      "account_locked",
      "account_unlocked",
      "logout",
    ]) {
      assert.ok(audited.includes(type), `audit has ${type}: ${audited.join(",")}`);
    }
    assert.ok(deliveriesMain.json<{ deliveries: unknown[] }>().deliveries.length >= 2);

    const places: [string, string][] = [
      ["logs", logText],
      ["audit log", audit.body],
      ["deliveries listing", deliveriesMain.body],
      ["second deliveries listing", deliveriesSecond.body],
    ];
    const leaks: string[] = [];
    for (const [place, text] of places) {
      for (const [label, secret] of secrets) {
        if (text.includes(secret)) leaks.push(`${label} in ${place}`);
      }
    }
    assert.deepEqual(leaks, [], `secrets leaked: ${leaks.join("; ")}`);
    // Link paths that carry tokens never appear in the logs, even partly.
    assert.ok(
      !/(email-verified|reset-password|verify-magic-link|email-change|secure-account)\/\d+\/[A-Za-z0-9_-]{20,}/.test(logText),
      "no token-bearing link path in the logs",
    );
    assert.ok(
      lines.some((l) => l.route === "/email-change/:recordId/:token") && lines.some((l) => l.route === "/ui/secure-account/:recordId/:token"),
      "the D24 link pages were logged, as patterns",
    );
  } finally {
    await h.close();
    await siteverify.close();
  }
});

test("D21: a link's token is masked in the logs however its path is spelled, whichever route matched or none", async () => {
  const h = await createHarness();
  try {
    await registerVerifiedMember(h, "paths@example.org");
    const { recordId, token } = await magicLinkFor(h, "paths@example.org");
    const short = "shortTok9"; // shorter than any real token: only its place in a link route masks it
    const variants = [
      `//auth/verify-magic-link/${recordId}/${token}`,
      `/auth//verify-magic-link/${recordId}/${token}`,
      `/AUTH/VERIFY-MAGIC-LINK/${recordId}/${token}`,
      `/auth/verify%2Dmagic-link/${recordId}/${token}`, // the router decodes it: this one uses the link
      `/auth/verify-magic-link;x/${recordId}/${token}`,
      `/auth/verify-magic-link/${recordId}/${token}/extra`,
      `/auth/verify-magic-link/${recordId}/${token}%2Fx`,
      `/ui//reset-password/${recordId}/${token}`,
      `/somewhere/${token}`,
      `/ui/login?next=/verify-magic-link/${recordId}/${token}`,
      `/ui/login?t=${token}`,
      `//email-verified/${recordId}/${short}`,
      `/Reset-Password/${recordId}/${short}`,
      `/auth/verify-magic-link/${recordId}/${short}`,
    ];
    for (const url of variants) {
      const response = await h.app.inject({
        method: "POST",
        url,
        headers: { "x-tenant-domain": h.tenant.domain, "content-type": "application/json" },
        payload: "{}",
      });
      assert.ok(response.statusCode < 500, `${url}: ${response.statusCode}`);
    }
    const logText = h.logs.join("");
    assert.ok(!logText.includes(token), "the live token is in the logs");
    assert.ok(!logText.includes(short), "a short token in a link route's place is in the logs");
    assert.ok(logText.includes("[redacted]"));
  } finally {
    await h.close();
  }
});
