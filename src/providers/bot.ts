import type { Logger } from "pino";
import { AuthError } from "../errors.js";
import type { BotProtectionSettings, BotProviderName } from "../model.js";
import { guardedPost } from "../security/outbound.js";
import { isSealed, type SecretBox } from "../security/secret-box.js";
import type { AltchaProvider } from "./altcha.js";

// The setting's shape is part of a tenant's settings, so it lives in model.ts with them.
export type { BotProtectionSettings, BotProviderName };

type SiteverifyProviderName = "turnstile" | "hcaptcha" | "recaptcha";

export const DEFAULT_VERIFY_URLS: Record<SiteverifyProviderName, string> = {
  turnstile: "https://challenges.cloudflare.com/turnstile/v0/siteverify",
  hcaptcha: "https://api.hcaptcha.com/siteverify",
  recaptcha: "https://www.google.com/recaptcha/api/siteverify",
};

/** Which tenant asks, and when: ALTCHA challenges are bound to a tenant and expire by the injected clock. */
export interface BotCheckContext {
  tenantId: string;
  remoteIp: string;
  now: number;
}

export interface BotVerifier {
  /** Resolves when the challenge passed; throws AuthError("bot_check_failed") when missing/failed, AuthError("bot_check_unavailable") when the provider can't be reached or answers garbage (fail closed). */
  verify(settings: BotProtectionSettings, token: string | undefined, context: BotCheckContext): Promise<void>;
}

interface SiteverifyAnswer {
  success: boolean;
  score: number | undefined;
  errorCodes: string[];
}

/** Thrown inside this module only, so every way the provider can fail maps to one warning and one 503. */
class ProviderUnavailable extends Error {}

export interface BotVerifierOptions {
  log: Logger;
  timeoutMs?: number;
  altcha?: AltchaProvider;
  secrets?: Pick<SecretBox, "open">;
  /**
   * contract.md#d21: a tenant's `verifyUrl` goes through the SSRF guard of its webhooks (contract.md#d9), so it can't post
   * the tenant's secret to an internal address. WEBHOOK_ALLOW_PRIVATE_NETWORKS lifts both.
   */
  allowPrivateNetworks?: boolean;
}

export function createBotVerifier(options: BotVerifierOptions): BotVerifier {
  const log = options.log;
  const timeoutMs = options.timeoutMs ?? 5000;
  const allowPrivateNetworks = options.allowPrivateNetworks ?? false;

  /** The stored secret, opened; a value stored before sealing existed is used as it is. */
  function readSecretKey(provider: SiteverifyProviderName, stored: string): string {
    if (!isSealed(stored)) return stored;
    try {
      if (!options.secrets) throw new Error("no secret box");
      return options.secrets.open(stored);
    } catch (error) {
      // SECRETS_KEY changed since the secret was stored: the operator must send botProtection again.
      log.error({ provider }, "the tenant's bot secretKey can't be opened with SECRETS_KEY or SECRETS_KEY_PREVIOUS; failing closed");
      throw new AuthError("bot_check_unavailable", { cause: error });
    }
  }

  async function verifyWithSiteverify(provider: SiteverifyProviderName, settings: BotProtectionSettings, token: string, remoteIp: string): Promise<void> {
    if (!settings.secretKey) {
      // A tenant misconfiguration: fail closed rather than let every request through.
      log.warn({ provider }, "bot protection has no secretKey; failing closed");
      throw new AuthError("bot_check_unavailable");
    }
    const secretKey = readSecretKey(provider, settings.secretKey);
    const url = settings.verifyUrl ?? DEFAULT_VERIFY_URLS[provider];
    let answer: SiteverifyAnswer;
    try {
      answer = await postSiteverify(url, secretKey, token, remoteIp, timeoutMs, allowPrivateNetworks);
    } catch (error) {
      // The error never holds the form body, so neither the secret nor the token reaches the log.
      log.warn({ provider, err: error }, "bot provider unavailable; failing closed");
      throw new AuthError("bot_check_unavailable", { cause: error });
    }
    if (!answer.success) {
      // A rejected secret looks like a failed challenge to the member; the operator must hear of it.
      if (answer.errorCodes.some((code) => code.includes("secret"))) {
        log.warn({ provider, errorCodes: answer.errorCodes }, "bot provider rejected the tenant's secret");
      }
      throw new AuthError("bot_check_failed");
    }
    if (provider === "recaptcha" && settings.minScore !== undefined) {
      // reCAPTCHA v3 always says success; the score is the verdict. No score means v2 keys: not enough.
      if (answer.score === undefined || answer.score < settings.minScore) throw new AuthError("bot_check_failed");
    }
  }

  return {
    async verify(settings, token, context) {
      const provider = settings.provider;
      if (provider === "none") return;
      if (!token) throw new AuthError("bot_check_failed");
      switch (provider) {
        case "altcha":
          if (!options.altcha) throw new AuthError("bot_check_unavailable");
          if (!(await options.altcha.verifyPayload(context.tenantId, token, context.now))) throw new AuthError("bot_check_failed");
          return;
        case "turnstile":
        case "hcaptcha":
        case "recaptcha":
          return verifyWithSiteverify(provider, settings, token, context.remoteIp);
        default:
          // Settings come from storage; an unknown provider must not become "no check".
          log.warn({ provider: String(provider) }, "unknown bot provider; failing closed");
          throw new AuthError("bot_check_unavailable");
      }
    },
  };
}

async function postSiteverify(
  url: string,
  secret: string,
  token: string,
  remoteIp: string,
  timeoutMs: number,
  allowPrivateNetworks: boolean,
): Promise<SiteverifyAnswer> {
  const form = new URLSearchParams({ secret, response: token });
  if (remoteIp) form.set("remoteip", remoteIp);
  // Never follows a redirect: a 307/308 would resend the secret to wherever it points.
  const result = await guardedPost({
    url,
    body: form.toString(),
    headers: { "content-type": "application/x-www-form-urlencoded" },
    timeoutMs,
    allowPrivateNetworks,
  });
  if ("error" in result) throw new ProviderUnavailable(`siteverify: ${result.error}`);
  if (result.status < 200 || result.status >= 300) throw new ProviderUnavailable(`siteverify answered HTTP ${result.status}`);
  if (!result.complete) throw new ProviderUnavailable("siteverify answer cut short");
  return parseSiteverifyAnswer(result.body);
}

function parseSiteverifyAnswer(text: string): SiteverifyAnswer {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ProviderUnavailable("siteverify answer is not JSON");
  }
  if (typeof body !== "object" || body === null) throw new ProviderUnavailable("siteverify answer is not an object");
  const { success, score, "error-codes": errorCodes } = body as Record<string, unknown>;
  if (typeof success !== "boolean") throw new ProviderUnavailable("siteverify answer has no boolean success");
  return {
    success,
    score: typeof score === "number" ? score : undefined,
    errorCodes: Array.isArray(errorCodes) ? errorCodes.filter((c): c is string => typeof c === "string") : [],
  };
}
