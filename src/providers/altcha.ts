/**
 * ALTCHA (contract.md#d10): self-hosted proof of work through altcha-lib. GET /auth/bot-challenge issues an
 * HMAC-signed challenge; the widget's payload (base64 JSON {challenge, solution}) is accepted
 * once, before its expiry. Expiry and the tenant are carried in the challenge's signed `data` and
 * checked against the injected clock (altcha-lib would read the wall clock), and a solution is
 * claimed in the store so it can't be replayed, on any instance.
 */
import { createChallenge, verifySolution, type Challenge, type Payload } from "altcha-lib";
import { deriveKey as derivePbkdf2 } from "altcha-lib/algorithms/pbkdf2";
import { deriveKey as deriveSha } from "altcha-lib/algorithms/sha";
import { randomIntBetween, type Random } from "../core/random.js";
import { ALTCHA_CHALLENGE_TTL_MS, ALTCHA_PROOF_OF_WORK } from "../rules.js";
import { sha256Hex } from "../security/hashing.js";

export interface AltchaDifficulty {
  algorithm: "PBKDF2/SHA-256" | "SHA-256";
  cost: number;
  counterMin: number;
  counterMax: number;
}

/** rules.ts says why these numbers (about a second in a browser). */
export const DEFAULT_ALTCHA_DIFFICULTY: AltchaDifficulty = ALTCHA_PROOF_OF_WORK;

export interface AltchaOptions {
  /** HMAC secrets: one signs the challenge, one the derived key (altcha-lib's deterministic mode). */
  signatureSecret: string;
  keySignatureSecret: string;
  difficulty: AltchaDifficulty;
  random: Random;
  /** Records a solved challenge id; false when it was already recorded (a replay). */
  claimOnce(tenantId: string, challengeId: string, expiresAt: number, now: number): Promise<boolean>;
}

export interface AltchaProvider {
  createChallenge(tenantId: string, now: number): Promise<Challenge>;
  /** True only for a well-formed, correctly signed, solved, unexpired, first-time payload of this tenant. */
  verifyPayload(tenantId: string, payload: string, now: number): Promise<boolean>;
}

function parsePayload(payload: string): Payload | undefined {
  try {
    const parsed = JSON.parse(Buffer.from(payload, "base64").toString("utf8")) as Payload;
    const ok = typeof parsed?.challenge?.parameters === "object" && typeof parsed.solution === "object" && typeof parsed.challenge.signature === "string";
    return ok ? parsed : undefined;
  } catch {
    return undefined;
  }
}

export function createAltchaProvider(options: AltchaOptions): AltchaProvider {
  const { difficulty } = options;
  const deriveKey = difficulty.algorithm === "SHA-256" ? deriveSha : derivePbkdf2;
  return {
    createChallenge(tenantId, now) {
      return createChallenge({
        algorithm: difficulty.algorithm,
        cost: difficulty.cost,
        counter: randomIntBetween(options.random, difficulty.counterMin, difficulty.counterMax + 1),
        deriveKey,
        hmacSignatureSecret: options.signatureSecret,
        hmacKeySignatureSecret: options.keySignatureSecret,
        data: { tenant: tenantId, exp: now + ALTCHA_CHALLENGE_TTL_MS },
      });
    },
    async verifyPayload(tenantId, payload, now) {
      const parsed = parsePayload(payload);
      const data = parsed?.challenge.parameters.data;
      if (!parsed || data?.tenant !== tenantId || typeof data.exp !== "number" || data.exp <= now) return false;
      // The parameters, data included, are covered by the signature, so tenant and expiry can't be edited.
      const result = await verifySolution({
        challenge: parsed.challenge,
        solution: parsed.solution,
        deriveKey,
        hmacSignatureSecret: options.signatureSecret,
        hmacKeySignatureSecret: options.keySignatureSecret,
      }).catch(() => ({ verified: false }));
      if (!result.verified) return false;
      return options.claimOnce(tenantId, sha256Hex(parsed.challenge.signature!), data.exp, now);
    },
  };
}
