import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { after, before, beforeEach, describe, test } from "node:test";
import { pino } from "pino";
import { AuthError, type ErrorCode } from "../src/errors.js";
import { createBotVerifier, type BotProtectionSettings } from "../src/providers/bot.js";
import { closedPortUrl, listenOnLoopback } from "./support/local-servers.js";

const CONTEXT = { tenantId: "ten_test", remoteIp: "203.0.113.7", now: 0 };

/** A local siteverify server. It acts on the part of the token before the first ".", so tests can add a unique tail. */
interface SeenRequest {
  method: string;
  path: string;
  contentType: string | undefined;
  form: Record<string, string>;
}

const seen: SeenRequest[] = [];
let server: Server;
let baseUrl: string;
let closedUrl: string;

function answerSiteverify(request: IncomingMessage, response: ServerResponse, body: string): void {
  const form = Object.fromEntries(new URLSearchParams(body));
  seen.push({ method: request.method ?? "", path: request.url ?? "", contentType: request.headers["content-type"], form });
  const behaviour = (form.response ?? "").split(".")[0] ?? ""; // split gives at least one part
  const json = (value: unknown): void => {
    response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(value));
  };
  switch (behaviour) {
    case "pass":
      return json({ success: true, score: 0.9 });
    case "noscore":
      return json({ success: true });
    case "low":
      return json({ success: true, score: 0.1 });
    case "fail":
      return json({ success: false, "error-codes": ["invalid-input-response"] });
    case "badsecret":
      return json({ success: false, "error-codes": ["invalid-input-secret"] });
    case "weird":
      return json({ ok: true });
    case "500":
      return void response.writeHead(500).end("oops");
    case "garbage":
      return void response.writeHead(200, { "content-type": "text/html" }).end("<html>nope</html>");
    case "hang":
      return; // never answers: only the client's timeout ends this
    case "redirect":
      return void response.writeHead(307, { location: request.url ?? "/" }).end();
    default:
      return void response.writeHead(400).end();
  }
}

before(async () => {
  server = createServer((request, response) => {
    let body = "";
    request.setEncoding("utf8");
    request.on("data", (chunk: string) => (body += chunk));
    request.on("end", () => answerSiteverify(request, response, body));
  });
  baseUrl = await listenOnLoopback(server);
  closedUrl = await closedPortUrl();
});

after(async () => {
  server.closeAllConnections(); // the "hang" requests
  server.close();
  await once(server, "close");
});

beforeEach(() => {
  seen.length = 0;
});

const SECRET = "0x4AAAAAAA-tenant-secret-Zk7Qw";
const silentLog = pino({ level: "silent" });
// The local siteverify server is on loopback: these verifiers allow private networks, as dev mode
// does; "SSRF guard" below checks the production default.
const verifier = createBotVerifier({ log: silentLog, timeoutMs: 2000, allowPrivateNetworks: true });

function settingsFor(provider: "turnstile" | "hcaptcha" | "recaptcha", extra: Partial<BotProtectionSettings> = {}): BotProtectionSettings {
  return { provider, secretKey: SECRET, siteKey: "site-key", verifyUrl: `${baseUrl}/${provider}/siteverify`, ...extra };
}

function isAuthError(code: ErrorCode): (error: unknown) => boolean {
  return (error) => error instanceof AuthError && error.code === code;
}

for (const provider of ["turnstile", "hcaptcha", "recaptcha"] as const) {
  describe(`${provider} siteverify`, () => {
    test("posts secret, response and remoteip as a form to the overridden verifyUrl", async () => {
      await verifier.verify(settingsFor(provider), "pass", CONTEXT);
      assert.equal(seen.length, 1);
      assert.deepEqual(seen[0], {
        method: "POST",
        path: `/${provider}/siteverify`,
        contentType: "application/x-www-form-urlencoded",
        form: { secret: SECRET, response: "pass", remoteip: "203.0.113.7" },
      });
    });

    test("a failed challenge is bot_check_failed", async () => {
      await assert.rejects(verifier.verify(settingsFor(provider), "fail", CONTEXT), isAuthError("bot_check_failed"));
    });

    test("a missing or empty token is bot_check_failed without asking the provider", async () => {
      await assert.rejects(verifier.verify(settingsFor(provider), undefined, CONTEXT), isAuthError("bot_check_failed"));
      await assert.rejects(verifier.verify(settingsFor(provider), "", CONTEXT), isAuthError("bot_check_failed"));
      assert.equal(seen.length, 0);
    });

    for (const token of ["500", "garbage", "weird"]) {
      test(`an answer of kind "${token}" is bot_check_unavailable`, async () => {
        await assert.rejects(verifier.verify(settingsFor(provider), token, CONTEXT), isAuthError("bot_check_unavailable"));
        assert.equal(seen.length, 1);
      });
    }

    test("a provider that never answers is bot_check_unavailable after timeoutMs", async () => {
      const quick = createBotVerifier({ log: silentLog, timeoutMs: 200, allowPrivateNetworks: true });
      await assert.rejects(quick.verify(settingsFor(provider), "hang", CONTEXT), isAuthError("bot_check_unavailable"));
    });

    test("a refused connection is bot_check_unavailable", async () => {
      const settings = settingsFor(provider, { verifyUrl: `${closedUrl}/siteverify` });
      await assert.rejects(verifier.verify(settings, "pass", CONTEXT), isAuthError("bot_check_unavailable"));
    });

    test("a tenant without a secretKey fails closed without asking the provider", async () => {
      const settings = settingsFor(provider, { secretKey: undefined });
      await assert.rejects(verifier.verify(settings, "pass", CONTEXT), isAuthError("bot_check_unavailable"));
      assert.equal(seen.length, 0);
    });
  });
}

describe("reCAPTCHA minScore", () => {
  test("a score at or above minScore passes", async () => {
    await verifier.verify(settingsFor("recaptcha", { minScore: 0.5 }), "pass", CONTEXT);
    await verifier.verify(settingsFor("recaptcha", { minScore: 0.9 }), "pass", CONTEXT);
  });

  test("a score below minScore is bot_check_failed", async () => {
    await assert.rejects(verifier.verify(settingsFor("recaptcha", { minScore: 0.5 }), "low", CONTEXT), isAuthError("bot_check_failed"));
  });

  test("a missing score is bot_check_failed when minScore is set", async () => {
    await assert.rejects(verifier.verify(settingsFor("recaptcha", { minScore: 0.5 }), "noscore", CONTEXT), isAuthError("bot_check_failed"));
  });

  test("without minScore a low score still passes", async () => {
    await verifier.verify(settingsFor("recaptcha"), "low", CONTEXT);
  });
});

describe("providers without siteverify", () => {
  test("none passes with or without a token and calls nobody", async () => {
    await verifier.verify({ provider: "none" }, undefined, CONTEXT);
    await verifier.verify({ provider: "none", verifyUrl: `${baseUrl}/none` }, "anything", CONTEXT);
    assert.equal(seen.length, 0);
  });

  test("altcha without a configured ALTCHA provider fails closed", async () => {
    await assert.rejects(verifier.verify({ provider: "altcha" }, "some-solution", CONTEXT), isAuthError("bot_check_unavailable"));
  });

  test("an unknown provider read from storage fails closed", async () => {
    const settings = { provider: "captchaX", verifyUrl: `${baseUrl}/x` } as unknown as BotProtectionSettings;
    await assert.rejects(verifier.verify(settings, "pass", CONTEXT), isAuthError("bot_check_unavailable"));
    assert.equal(seen.length, 0);
  });
});

describe("logging", () => {
  test("the log never holds the secret or the token, but names the provider of an outage", async () => {
    const lines: string[] = [];
    const log = pino({ level: "trace" }, { write: (line: string) => void lines.push(line) });
    const logged = createBotVerifier({ log, timeoutMs: 200, allowPrivateNetworks: true });
    const tail = "tok-Qm93ZXJ5LXVuaXF1ZQ";
    for (const provider of ["turnstile", "hcaptcha", "recaptcha"] as const) {
      for (const kind of ["pass", "fail", "badsecret", "low", "500", "garbage", "weird", "hang"]) {
        await logged.verify(settingsFor(provider, { minScore: 0.5 }), `${kind}.${tail}`, CONTEXT).catch(() => undefined);
      }
      const refused = settingsFor(provider, { verifyUrl: `${closedUrl}/siteverify` });
      await logged.verify(refused, `pass.${tail}`, CONTEXT).catch(() => undefined);
    }
    const output = lines.join("");
    assert.ok(seen.length > 0 && seen.every((request) => request.form.secret === SECRET));
    assert.ok(!output.includes(SECRET), "secret leaked into the log");
    assert.ok(!output.includes(tail), "token leaked into the log");
    const warnings = lines.map((line) => JSON.parse(line) as { level: number; provider?: string; msg: string });
    for (const provider of ["turnstile", "hcaptcha", "recaptcha"]) {
      assert.ok(warnings.some((entry) => entry.level === 40 && entry.provider === provider && /unavailable/.test(entry.msg)));
      assert.ok(warnings.some((entry) => entry.level === 40 && entry.provider === provider && /secret/.test(entry.msg)));
    }
  });
});

describe("SSRF guard (D21: a verifyUrl override is held to the webhooks' guard of D9)", () => {
  const guarded = createBotVerifier({ log: silentLog, timeoutMs: 2000 });
  const port = (): string => new URL(baseUrl).port;

  test("by default a verifyUrl at a loopback or private address fails closed and the secret is never sent", async () => {
    for (const verifyUrl of [
      `${baseUrl}/turnstile/siteverify`,
      `http://localhost:${port()}/turnstile/siteverify`,
      `http://0x7f.1:${port()}/turnstile/siteverify`,
      `http://[::ffff:127.0.0.1]:${port()}/turnstile/siteverify`,
      "http://169.254.169.254/latest/meta-data",
      "http://10.0.0.1/siteverify",
    ]) {
      await assert.rejects(guarded.verify(settingsFor("turnstile", { verifyUrl }), "pass", CONTEXT), isAuthError("bot_check_unavailable"), verifyUrl);
    }
    assert.equal(seen.length, 0, "no request reached the internal server");
  });

  test("a redirect is not followed: the secret goes to the verifyUrl only", async () => {
    await assert.rejects(verifier.verify(settingsFor("turnstile"), "redirect", CONTEXT), isAuthError("bot_check_unavailable"));
    assert.equal(seen.length, 1);
  });
});
