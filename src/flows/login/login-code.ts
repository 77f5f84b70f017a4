/**
 * contract.md#d26: the code (LOGIN_CODE_DIGITS digits) mailed with every magic link, for a member who reads the
 * email on another device than the browser that asked. It lives on the link's row: the same
 * lifetime, and using either the link or the code uses both.
 *
 * A code has about 20 bits, so guessing is bounded (rules.ts): rateRules.loginCodeComparisons
 * caps the codes compared per email in a link's lifetime, counted before the comparison so
 * concurrent guesses can't overrun it (past it the code is void: 429 until the link has expired),
 * the magic link cooldown caps the links per email, and loginCodePerEmail and loginCodePerIp the
 * attempts. A right code counts too, and so does each second-factor retry, which sends the code again.
 *
 * A wrong code must not tell a known email from an unknown one, by its answer or its timing or the
 * next request's (contract.md#d19). So a wrong code writes nothing but the per-email counters, which every
 * email gets alike, and takes no lock; only a right code, which an attacker doesn't have, opens a
 * transaction on the member's row.
 */
import type { Deps } from "../../deps.js";
import { AuthError } from "../../errors.js";
import type { RequestContext, Tenant } from "../../model.js";
import { constantTimeEqual, loginCodeHash } from "../../security/hashing.js";
import { normalizeEmail } from "../../security/identity.js";
import { rateRules } from "../../rules.js";
import { enforceRateLimit, verifyBotChallenge } from "../kernel/guards.js";
import type { LoginOutcome } from "../kernel/login-outcome.js";
import { answerMagicLogin, finishMagicLogin } from "./magic-link.js";

const NO_MEMBER = 0;
const CODE_MESSAGE = "This code is invalid or has expired.";
/** Compared against when there is no live code, so a miss costs what a wrong code costs. */
const NO_CODE_HASH = "0".repeat(32);

export interface VerifyLoginCodeInput {
  email: string;
  code: string;
  botToken: string | undefined;
  twoFACode: string | undefined;
}

export async function verifyLoginCode(deps: Deps, tenant: Tenant, input: VerifyLoginCodeInput, context: RequestContext): Promise<LoginOutcome> {
  return deps.metrics.countLogin(
    "login_code",
    () => loginWithCode(deps, tenant, input, context),
    (result) => result.kind === "signed_in",
  );
}

async function loginWithCode(deps: Deps, tenant: Tenant, input: VerifyLoginCodeInput, context: RequestContext): Promise<LoginOutcome> {
  const now = deps.clock.now();
  const email = normalizeEmail(input.email);
  await verifyBotChallenge(deps, tenant, input.botToken, context);
  await enforceRateLimit(deps, tenant, rateRules.loginCodePerIp, context.ip, now);
  await enforceRateLimit(deps, tenant, rateRules.loginCodePerEmail, email, now);
  const message = "Too many codes tried. Use the link in the email, or wait and ask for a new one.";
  await enforceRateLimit(deps, tenant, rateRules.loginCodeComparisons, email, now, { budget: true, message });
  const member = await deps.store.members.findMemberByEmail(tenant.id, email);
  const live = await deps.store.tokens.findLoginCode(tenant.id, member?.recordId ?? NO_MEMBER, now);
  const offered = loginCodeHash(deps.subjects, live?.tokenHash ?? "", input.code);
  if (!constantTimeEqual(offered, live?.codeHash ?? NO_CODE_HASH) || !member || !live) throw new AuthError("invalid_token", { message: CODE_MESSAGE });
  const outcome = await deps.store.transaction(async (tx) => {
    // The member row first (contract.md#d20): a lock, or 2FA turned on, committed since the read wins.
    const fresh = await tx.members.findMemberById(tenant.id, member.recordId, { lock: true });
    if (!fresh) return { kind: "invalid" as const };
    // A right code with a missing or wrong second factor leaves the code usable, as the link (contract.md#d15).
    return finishMagicLogin(tx, deps, tenant, fresh, live.tokenHash, input.twoFACode, "login_code", context, now);
  });
  if (outcome.kind === "invalid") throw new AuthError("invalid_token", { message: CODE_MESSAGE });
  return answerMagicLogin(deps, tenant, outcome);
}
